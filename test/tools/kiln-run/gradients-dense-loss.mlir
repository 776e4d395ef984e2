// Gradient checks of dense with and without bias (matmul with transposes,
// reduce_sum) and of softmax_cross_entropy with and without label smoothing,
// through --kiln-autodiff.
// RUN: kiln-opt %s -split-input-file --kiln-autodiff | kiln-run -split-input-file --check-gradients --synthetic-inputs --batch=3 | FileCheck %s

// CHECK-LABEL: @bias.w1 6x5xf32: 16/30 elements, max |grad| {{[-+.e0-9]+}}, error {{[-+.e0-9]+}} ok{{$}}
// CHECK: @bias.b1 5xf32: 5/5 elements, max |grad| {{[-+.e0-9]+}}, error {{[-+.e0-9]+}} ok{{$}}
// CHECK: @bias.w2 5x4xf32: 16/20 elements, max |grad| {{[-+.e0-9]+}}, error {{[-+.e0-9]+}} ok{{$}}
// CHECK: @bias.b2 4xf32: 4/4 elements, max |grad| {{[-+.e0-9]+}}, error {{[-+.e0-9]+}} ok{{$}}
// CHECK: gradient check passed: 4 parameters (0 unchecked)
module {
  kiln.variable parameter @bias.w1 : tensor<6x5xf32> init he_normal
  kiln.variable parameter @bias.b1 : tensor<5xf32> init normal std 5.000000e-01
  kiln.variable parameter @bias.w2 : tensor<5x4xf32> init he_normal
  kiln.variable parameter @bias.b2 : tensor<4xf32> init normal std 5.000000e-01
  func.func @forward(%x: tensor<?x6xf32>, %labels: tensor<?xi32>) -> (tensor<f32>, tensor<?x4xf32>) {
    %v1 = kiln.read @bias.w1 : tensor<6x5xf32>
    %v2 = kiln.read @bias.b1 : tensor<5xf32>
    %v3 = kiln.dense %x, %v1 bias %v2 : (tensor<?x6xf32>, tensor<6x5xf32>, tensor<5xf32>) -> tensor<?x5xf32>
    %v4 = kiln.relu %v3 : tensor<?x5xf32>
    %v5 = kiln.read @bias.w2 : tensor<5x4xf32>
    %v6 = kiln.read @bias.b2 : tensor<4xf32>
    %v7 = kiln.dense %v4, %v5 bias %v6 : (tensor<?x5xf32>, tensor<5x4xf32>, tensor<4xf32>) -> tensor<?x4xf32>
    %loss = kiln.softmax_cross_entropy %v7, %labels : (tensor<?x4xf32>, tensor<?xi32>) -> tensor<f32>
    return %loss, %v7 : tensor<f32>, tensor<?x4xf32>
  }
}

// -----

// CHECK-LABEL: @nobias.w1 6x5xf32: 16/30 elements, max |grad| {{[-+.e0-9]+}}, error {{[-+.e0-9]+}} ok{{$}}
// CHECK: @nobias.w2 5x4xf32: 16/20 elements, max |grad| {{[-+.e0-9]+}}, error {{[-+.e0-9]+}} ok{{$}}
// CHECK: gradient check passed: 2 parameters (0 unchecked)
module {
  kiln.variable parameter @nobias.w1 : tensor<6x5xf32> init he_normal
  kiln.variable parameter @nobias.w2 : tensor<5x4xf32> init he_normal
  func.func @forward(%x: tensor<?x6xf32>, %labels: tensor<?xi32>) -> (tensor<f32>, tensor<?x4xf32>) {
    %v1 = kiln.read @nobias.w1 : tensor<6x5xf32>
    %v2 = kiln.dense %x, %v1 : (tensor<?x6xf32>, tensor<6x5xf32>) -> tensor<?x5xf32>
    %v3 = kiln.relu %v2 : tensor<?x5xf32>
    %v4 = kiln.read @nobias.w2 : tensor<5x4xf32>
    %v5 = kiln.dense %v3, %v4 : (tensor<?x5xf32>, tensor<5x4xf32>) -> tensor<?x4xf32>
    %loss = kiln.softmax_cross_entropy %v5, %labels : (tensor<?x4xf32>, tensor<?xi32>) -> tensor<f32>
    return %loss, %v5 : tensor<f32>, tensor<?x4xf32>
  }
}

// -----

// CHECK-LABEL: @smoothing.w1 6x5xf32: 16/30 elements, max |grad| {{[-+.e0-9]+}}, error {{[-+.e0-9]+}} ok{{$}}
// CHECK: @smoothing.b1 5xf32: 5/5 elements, max |grad| {{[-+.e0-9]+}}, error {{[-+.e0-9]+}} ok{{$}}
// CHECK: @smoothing.w2 5x4xf32: 16/20 elements, max |grad| {{[-+.e0-9]+}}, error {{[-+.e0-9]+}} ok{{$}}
// CHECK: @smoothing.b2 4xf32: 4/4 elements, max |grad| {{[-+.e0-9]+}}, error {{[-+.e0-9]+}} ok{{$}}
// CHECK: gradient check passed: 4 parameters (0 unchecked)
module {
  kiln.variable parameter @smoothing.w1 : tensor<6x5xf32> init he_normal
  kiln.variable parameter @smoothing.b1 : tensor<5xf32> init normal std 5.000000e-01
  kiln.variable parameter @smoothing.w2 : tensor<5x4xf32> init he_normal
  kiln.variable parameter @smoothing.b2 : tensor<4xf32> init normal std 5.000000e-01
  func.func @forward(%x: tensor<?x6xf32>, %labels: tensor<?xi32>) -> (tensor<f32>, tensor<?x4xf32>) {
    %v1 = kiln.read @smoothing.w1 : tensor<6x5xf32>
    %v2 = kiln.read @smoothing.b1 : tensor<5xf32>
    %v3 = kiln.dense %x, %v1 bias %v2 : (tensor<?x6xf32>, tensor<6x5xf32>, tensor<5xf32>) -> tensor<?x5xf32>
    %v4 = kiln.relu %v3 : tensor<?x5xf32>
    %v5 = kiln.read @smoothing.w2 : tensor<5x4xf32>
    %v6 = kiln.read @smoothing.b2 : tensor<4xf32>
    %v7 = kiln.dense %v4, %v5 bias %v6 : (tensor<?x5xf32>, tensor<5x4xf32>, tensor<4xf32>) -> tensor<?x4xf32>
    %loss = kiln.softmax_cross_entropy %v7, %labels label_smoothing 1.000000e-01 : (tensor<?x4xf32>, tensor<?xi32>) -> tensor<f32>
    return %loss, %v7 : tensor<f32>, tensor<?x4xf32>
  }
}
