// Gradient checks of conv2d (its backward-data and backward-filter ops)
// through --kiln-autodiff: two stacked convolutions, so the second one's
// geometry is exercised by both gradients, then every output position gets
// its own classifier weight (reshape + dense).
// RUN: kiln-opt %s -split-input-file --kiln-autodiff | kiln-run -split-input-file --check-gradients --synthetic-inputs --batch=2 | FileCheck %s

// CHECK-LABEL: @stride1.a 3x3x2x3xf32: 16/54 elements, max |grad| {{[-+.e0-9]+}}, error {{[-+.e0-9]+}} ok{{$}}
// CHECK: @stride1.b 3x3x3x4xf32: 16/108 elements, max |grad| {{[-+.e0-9]+}}, error {{[-+.e0-9]+}} ok{{$}}
// CHECK: @stride1.fc 144x3xf32: 16/432 elements, max |grad| {{[-+.e0-9]+}}, error {{[-+.e0-9]+}} ok{{$}}
// CHECK: gradient check passed: 3 parameters (0 unchecked)
module {
  kiln.variable parameter @stride1.a : tensor<3x3x2x3xf32> init he_normal
  kiln.variable parameter @stride1.b : tensor<3x3x3x4xf32> init he_normal
  kiln.variable parameter @stride1.fc : tensor<144x3xf32> init normal std 1.000000e-01
  func.func @forward(%x: tensor<?x6x6x2xf32>, %labels: tensor<?xi32>) -> (tensor<f32>, tensor<?x3xf32>) {
    %v1 = kiln.read @stride1.a : tensor<3x3x2x3xf32>
    %v2 = kiln.conv2d %x, %v1 stride [1, 1] pad [1, 1, 1, 1] : (tensor<?x6x6x2xf32>, tensor<3x3x2x3xf32>) -> tensor<?x6x6x3xf32>
    %v3 = kiln.read @stride1.b : tensor<3x3x3x4xf32>
    %v4 = kiln.conv2d %v2, %v3 stride [1, 1] pad [1, 1, 1, 1] : (tensor<?x6x6x3xf32>, tensor<3x3x3x4xf32>) -> tensor<?x6x6x4xf32>
    %v5 = kiln.reshape %v4 : tensor<?x6x6x4xf32> to tensor<?x144xf32>
    %v6 = kiln.read @stride1.fc : tensor<144x3xf32>
    %v7 = kiln.dense %v5, %v6 : (tensor<?x144xf32>, tensor<144x3xf32>) -> tensor<?x3xf32>
    %loss = kiln.softmax_cross_entropy %v7, %labels : (tensor<?x3xf32>, tensor<?xi32>) -> tensor<f32>
    return %loss, %v7 : tensor<f32>, tensor<?x3xf32>
  }
}

// -----

// CHECK-LABEL: @stride2.a 3x3x2x3xf32: 16/54 elements, max |grad| {{[-+.e0-9]+}}, error {{[-+.e0-9]+}} ok{{$}}
// CHECK: @stride2.b 3x3x3x4xf32: 16/108 elements, max |grad| {{[-+.e0-9]+}}, error {{[-+.e0-9]+}} ok{{$}}
// CHECK: @stride2.fc 36x3xf32: 16/108 elements, max |grad| {{[-+.e0-9]+}}, error {{[-+.e0-9]+}} ok{{$}}
// CHECK: gradient check passed: 3 parameters (0 unchecked)
module {
  kiln.variable parameter @stride2.a : tensor<3x3x2x3xf32> init he_normal
  kiln.variable parameter @stride2.b : tensor<3x3x3x4xf32> init he_normal
  kiln.variable parameter @stride2.fc : tensor<36x3xf32> init normal std 1.000000e-01
  func.func @forward(%x: tensor<?x6x6x2xf32>, %labels: tensor<?xi32>) -> (tensor<f32>, tensor<?x3xf32>) {
    %v1 = kiln.read @stride2.a : tensor<3x3x2x3xf32>
    %v2 = kiln.conv2d %x, %v1 stride [1, 1] pad [1, 1, 1, 1] : (tensor<?x6x6x2xf32>, tensor<3x3x2x3xf32>) -> tensor<?x6x6x3xf32>
    %v3 = kiln.read @stride2.b : tensor<3x3x3x4xf32>
    %v4 = kiln.conv2d %v2, %v3 stride [2, 2] pad [0, 1, 0, 1] : (tensor<?x6x6x3xf32>, tensor<3x3x3x4xf32>) -> tensor<?x3x3x4xf32>
    %v5 = kiln.reshape %v4 : tensor<?x3x3x4xf32> to tensor<?x36xf32>
    %v6 = kiln.read @stride2.fc : tensor<36x3xf32>
    %v7 = kiln.dense %v5, %v6 : (tensor<?x36xf32>, tensor<36x3xf32>) -> tensor<?x3xf32>
    %loss = kiln.softmax_cross_entropy %v7, %labels : (tensor<?x3xf32>, tensor<?xi32>) -> tensor<f32>
    return %loss, %v7 : tensor<f32>, tensor<?x3xf32>
  }
}

// -----

// CHECK-LABEL: @asympad.a 3x3x2x3xf32: 16/54 elements, max |grad| {{[-+.e0-9]+}}, error {{[-+.e0-9]+}} ok{{$}}
// CHECK: @asympad.b 2x3x3x4xf32: 16/72 elements, max |grad| {{[-+.e0-9]+}}, error {{[-+.e0-9]+}} ok{{$}}
// CHECK: @asympad.fc 140x3xf32: 16/420 elements, max |grad| {{[-+.e0-9]+}}, error {{[-+.e0-9]+}} ok{{$}}
// CHECK: gradient check passed: 3 parameters (0 unchecked)
module {
  kiln.variable parameter @asympad.a : tensor<3x3x2x3xf32> init he_normal
  kiln.variable parameter @asympad.b : tensor<2x3x3x4xf32> init he_normal
  kiln.variable parameter @asympad.fc : tensor<140x3xf32> init normal std 1.000000e-01
  func.func @forward(%x: tensor<?x6x6x2xf32>, %labels: tensor<?xi32>) -> (tensor<f32>, tensor<?x3xf32>) {
    %v1 = kiln.read @asympad.a : tensor<3x3x2x3xf32>
    %v2 = kiln.conv2d %x, %v1 stride [1, 1] pad [1, 1, 1, 1] : (tensor<?x6x6x2xf32>, tensor<3x3x2x3xf32>) -> tensor<?x6x6x3xf32>
    %v3 = kiln.read @asympad.b : tensor<2x3x3x4xf32>
    %v4 = kiln.conv2d %v2, %v3 stride [1, 1] pad [2, 0, 1, 0] : (tensor<?x6x6x3xf32>, tensor<2x3x3x4xf32>) -> tensor<?x7x5x4xf32>
    %v5 = kiln.reshape %v4 : tensor<?x7x5x4xf32> to tensor<?x140xf32>
    %v6 = kiln.read @asympad.fc : tensor<140x3xf32>
    %v7 = kiln.dense %v5, %v6 : (tensor<?x140xf32>, tensor<140x3xf32>) -> tensor<?x3xf32>
    %loss = kiln.softmax_cross_entropy %v7, %labels : (tensor<?x3xf32>, tensor<?xi32>) -> tensor<f32>
    return %loss, %v7 : tensor<f32>, tensor<?x3xf32>
  }
}

// -----

// CHECK-LABEL: @dilation2.a 3x3x2x3xf32: 16/54 elements, max |grad| {{[-+.e0-9]+}}, error {{[-+.e0-9]+}} ok{{$}}
// CHECK: @dilation2.b 3x3x3x4xf32: 16/108 elements, max |grad| {{[-+.e0-9]+}}, error {{[-+.e0-9]+}} ok{{$}}
// CHECK: @dilation2.fc 144x3xf32: 16/432 elements, max |grad| {{[-+.e0-9]+}}, error {{[-+.e0-9]+}} ok{{$}}
// CHECK: gradient check passed: 3 parameters (0 unchecked)
module {
  kiln.variable parameter @dilation2.a : tensor<3x3x2x3xf32> init he_normal
  kiln.variable parameter @dilation2.b : tensor<3x3x3x4xf32> init he_normal
  kiln.variable parameter @dilation2.fc : tensor<144x3xf32> init normal std 1.000000e-01
  func.func @forward(%x: tensor<?x6x6x2xf32>, %labels: tensor<?xi32>) -> (tensor<f32>, tensor<?x3xf32>) {
    %v1 = kiln.read @dilation2.a : tensor<3x3x2x3xf32>
    %v2 = kiln.conv2d %x, %v1 stride [1, 1] pad [1, 1, 1, 1] : (tensor<?x6x6x2xf32>, tensor<3x3x2x3xf32>) -> tensor<?x6x6x3xf32>
    %v3 = kiln.read @dilation2.b : tensor<3x3x3x4xf32>
    %v4 = kiln.conv2d %v2, %v3 stride [1, 1] pad [2, 2, 2, 2] dilation [2, 2] : (tensor<?x6x6x3xf32>, tensor<3x3x3x4xf32>) -> tensor<?x6x6x4xf32>
    %v5 = kiln.reshape %v4 : tensor<?x6x6x4xf32> to tensor<?x144xf32>
    %v6 = kiln.read @dilation2.fc : tensor<144x3xf32>
    %v7 = kiln.dense %v5, %v6 : (tensor<?x144xf32>, tensor<144x3xf32>) -> tensor<?x3xf32>
    %loss = kiln.softmax_cross_entropy %v7, %labels : (tensor<?x3xf32>, tensor<?xi32>) -> tensor<f32>
    return %loss, %v7 : tensor<f32>, tensor<?x3xf32>
  }
}

// -----

// CHECK-LABEL: @projection.a 3x3x2x3xf32: 16/54 elements, max |grad| {{[-+.e0-9]+}}, error {{[-+.e0-9]+}} ok{{$}}
// CHECK: @projection.b 1x1x3x4xf32: 12/12 elements, max |grad| {{[-+.e0-9]+}}, error {{[-+.e0-9]+}} ok{{$}}
// CHECK: @projection.fc 36x3xf32: 16/108 elements, max |grad| {{[-+.e0-9]+}}, error {{[-+.e0-9]+}} ok{{$}}
// CHECK: gradient check passed: 3 parameters (0 unchecked)
module {
  kiln.variable parameter @projection.a : tensor<3x3x2x3xf32> init he_normal
  kiln.variable parameter @projection.b : tensor<1x1x3x4xf32> init he_normal
  kiln.variable parameter @projection.fc : tensor<36x3xf32> init normal std 1.000000e-01
  func.func @forward(%x: tensor<?x6x6x2xf32>, %labels: tensor<?xi32>) -> (tensor<f32>, tensor<?x3xf32>) {
    %v1 = kiln.read @projection.a : tensor<3x3x2x3xf32>
    %v2 = kiln.conv2d %x, %v1 stride [1, 1] pad [1, 1, 1, 1] : (tensor<?x6x6x2xf32>, tensor<3x3x2x3xf32>) -> tensor<?x6x6x3xf32>
    %v3 = kiln.read @projection.b : tensor<1x1x3x4xf32>
    %v4 = kiln.conv2d %v2, %v3 stride [2, 2] pad [0, 0, 0, 0] : (tensor<?x6x6x3xf32>, tensor<1x1x3x4xf32>) -> tensor<?x3x3x4xf32>
    %v5 = kiln.reshape %v4 : tensor<?x3x3x4xf32> to tensor<?x36xf32>
    %v6 = kiln.read @projection.fc : tensor<36x3xf32>
    %v7 = kiln.dense %v5, %v6 : (tensor<?x36xf32>, tensor<36x3xf32>) -> tensor<?x3xf32>
    %loss = kiln.softmax_cross_entropy %v7, %labels : (tensor<?x3xf32>, tensor<?xi32>) -> tensor<f32>
    return %loss, %v7 : tensor<f32>, tensor<?x3xf32>
  }
}

// -----

// CHECK-LABEL: @stride3.a 3x3x2x3xf32: 16/54 elements, max |grad| {{[-+.e0-9]+}}, error {{[-+.e0-9]+}} ok{{$}}
// CHECK: @stride3.b 2x2x3x4xf32: 16/48 elements, max |grad| {{[-+.e0-9]+}}, error {{[-+.e0-9]+}} ok{{$}}
// CHECK: @stride3.fc 16x3xf32: 16/48 elements, max |grad| {{[-+.e0-9]+}}, error {{[-+.e0-9]+}} ok{{$}}
// CHECK: gradient check passed: 3 parameters (0 unchecked)
module {
  kiln.variable parameter @stride3.a : tensor<3x3x2x3xf32> init he_normal
  kiln.variable parameter @stride3.b : tensor<2x2x3x4xf32> init he_normal
  kiln.variable parameter @stride3.fc : tensor<16x3xf32> init normal std 1.000000e-01
  func.func @forward(%x: tensor<?x6x6x2xf32>, %labels: tensor<?xi32>) -> (tensor<f32>, tensor<?x3xf32>) {
    %v1 = kiln.read @stride3.a : tensor<3x3x2x3xf32>
    %v2 = kiln.conv2d %x, %v1 stride [1, 1] pad [1, 1, 1, 1] : (tensor<?x6x6x2xf32>, tensor<3x3x2x3xf32>) -> tensor<?x6x6x3xf32>
    %v3 = kiln.read @stride3.b : tensor<2x2x3x4xf32>
    %v4 = kiln.conv2d %v2, %v3 stride [3, 3] pad [0, 0, 0, 0] : (tensor<?x6x6x3xf32>, tensor<2x2x3x4xf32>) -> tensor<?x2x2x4xf32>
    %v5 = kiln.reshape %v4 : tensor<?x2x2x4xf32> to tensor<?x16xf32>
    %v6 = kiln.read @stride3.fc : tensor<16x3xf32>
    %v7 = kiln.dense %v5, %v6 : (tensor<?x16xf32>, tensor<16x3xf32>) -> tensor<?x3xf32>
    %loss = kiln.softmax_cross_entropy %v7, %labels : (tensor<?x3xf32>, tensor<?xi32>) -> tensor<f32>
    return %loss, %v7 : tensor<f32>, tensor<?x3xf32>
  }
}
