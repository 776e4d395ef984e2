// Gradient checks of relu, add (a residual connection), reshape (4-D to 4-D,
// then a convolution) and cast (f32 -> bf16 -> relu in bf16 -> f32: the
// gradient flows through both casts; the check runs without bf16 rounding)
// through --kiln-autodiff.
// RUN: kiln-opt %s -split-input-file --kiln-autodiff | kiln-run -split-input-file --check-gradients --synthetic-inputs --batch=2 | FileCheck %s
// The same with --check-kinks=detect (perturbations that flip a ReLU are
// avoided rather than replayed).
// RUN: kiln-opt %s -split-input-file --kiln-autodiff | kiln-run -split-input-file --check-gradients --check-kinks=detect --check-step=0.01 --synthetic-inputs --batch=2 | FileCheck %s

// CHECK-LABEL: @relu.a 3x3x2x3xf32: 16/54 elements, max |grad| {{[-+.e0-9]+}}, error {{[-+.e0-9]+}} ok{{$}}
// CHECK: @relu.b 3x3x3x3xf32: 16/81 elements, max |grad| {{[-+.e0-9]+}}, error {{[-+.e0-9]+}} ok{{$}}
// CHECK: @relu.fc 48x3xf32: 16/144 elements, max |grad| {{[-+.e0-9]+}}, error {{[-+.e0-9]+}} ok{{$}}
// CHECK: gradient check passed: 3 parameters (0 unchecked)
module {
  kiln.variable parameter @relu.a : tensor<3x3x2x3xf32> init he_normal
  kiln.variable parameter @relu.b : tensor<3x3x3x3xf32> init he_normal
  kiln.variable parameter @relu.fc : tensor<48x3xf32> init normal std 1.000000e-01
  func.func @forward(%x: tensor<?x4x4x2xf32>, %labels: tensor<?xi32>) -> (tensor<f32>, tensor<?x3xf32>) {
    %v1 = kiln.read @relu.a : tensor<3x3x2x3xf32>
    %v2 = kiln.conv2d %x, %v1 stride [1, 1] pad [1, 1, 1, 1] : (tensor<?x4x4x2xf32>, tensor<3x3x2x3xf32>) -> tensor<?x4x4x3xf32>
    %v3 = kiln.relu %v2 : tensor<?x4x4x3xf32>
    %v4 = kiln.read @relu.b : tensor<3x3x3x3xf32>
    %v5 = kiln.conv2d %v3, %v4 stride [1, 1] pad [1, 1, 1, 1] : (tensor<?x4x4x3xf32>, tensor<3x3x3x3xf32>) -> tensor<?x4x4x3xf32>
    %v6 = kiln.relu %v5 : tensor<?x4x4x3xf32>
    %v7 = kiln.reshape %v6 : tensor<?x4x4x3xf32> to tensor<?x48xf32>
    %v8 = kiln.read @relu.fc : tensor<48x3xf32>
    %v9 = kiln.dense %v7, %v8 : (tensor<?x48xf32>, tensor<48x3xf32>) -> tensor<?x3xf32>
    %loss = kiln.softmax_cross_entropy %v9, %labels : (tensor<?x3xf32>, tensor<?xi32>) -> tensor<f32>
    return %loss, %v9 : tensor<f32>, tensor<?x3xf32>
  }
}

// -----

// CHECK-LABEL: @residual.a 3x3x2x3xf32: 16/54 elements, max |grad| {{[-+.e0-9]+}}, error {{[-+.e0-9]+}} ok{{$}}
// CHECK: @residual.b 3x3x3x3xf32: 16/81 elements, max |grad| {{[-+.e0-9]+}}, error {{[-+.e0-9]+}} ok{{$}}
// CHECK: @residual.fc 48x3xf32: 16/144 elements, max |grad| {{[-+.e0-9]+}}, error {{[-+.e0-9]+}} ok{{$}}
// CHECK: gradient check passed: 3 parameters (0 unchecked)
module {
  kiln.variable parameter @residual.a : tensor<3x3x2x3xf32> init he_normal
  kiln.variable parameter @residual.b : tensor<3x3x3x3xf32> init he_normal
  kiln.variable parameter @residual.fc : tensor<48x3xf32> init normal std 1.000000e-01
  func.func @forward(%x: tensor<?x4x4x2xf32>, %labels: tensor<?xi32>) -> (tensor<f32>, tensor<?x3xf32>) {
    %v1 = kiln.read @residual.a : tensor<3x3x2x3xf32>
    %v2 = kiln.conv2d %x, %v1 stride [1, 1] pad [1, 1, 1, 1] : (tensor<?x4x4x2xf32>, tensor<3x3x2x3xf32>) -> tensor<?x4x4x3xf32>
    %v3 = kiln.relu %v2 : tensor<?x4x4x3xf32>
    %v4 = kiln.read @residual.b : tensor<3x3x3x3xf32>
    %v5 = kiln.conv2d %v3, %v4 stride [1, 1] pad [1, 1, 1, 1] : (tensor<?x4x4x3xf32>, tensor<3x3x3x3xf32>) -> tensor<?x4x4x3xf32>
    %v6 = kiln.add %v5, %v3 : tensor<?x4x4x3xf32>
    %v7 = kiln.relu %v6 : tensor<?x4x4x3xf32>
    %v8 = kiln.reshape %v7 : tensor<?x4x4x3xf32> to tensor<?x48xf32>
    %v9 = kiln.read @residual.fc : tensor<48x3xf32>
    %v10 = kiln.dense %v8, %v9 : (tensor<?x48xf32>, tensor<48x3xf32>) -> tensor<?x3xf32>
    %loss = kiln.softmax_cross_entropy %v10, %labels : (tensor<?x3xf32>, tensor<?xi32>) -> tensor<f32>
    return %loss, %v10 : tensor<f32>, tensor<?x3xf32>
  }
}

// -----

// CHECK-LABEL: @reshape.a 3x3x2x4xf32: 16/72 elements, max |grad| {{[-+.e0-9]+}}, error {{[-+.e0-9]+}} ok{{$}}
// CHECK: @reshape.b 3x3x2x3xf32: 16/54 elements, max |grad| {{[-+.e0-9]+}}, error {{[-+.e0-9]+}} ok{{$}}
// CHECK: @reshape.fc 48x3xf32: 16/144 elements, max |grad| {{[-+.e0-9]+}}, error {{[-+.e0-9]+}} ok{{$}}
// CHECK: gradient check passed: 3 parameters (0 unchecked)
module {
  kiln.variable parameter @reshape.a : tensor<3x3x2x4xf32> init he_normal
  kiln.variable parameter @reshape.b : tensor<3x3x2x3xf32> init he_normal
  kiln.variable parameter @reshape.fc : tensor<48x3xf32> init normal std 1.000000e-01
  func.func @forward(%x: tensor<?x4x4x2xf32>, %labels: tensor<?xi32>) -> (tensor<f32>, tensor<?x3xf32>) {
    %v1 = kiln.read @reshape.a : tensor<3x3x2x4xf32>
    %v2 = kiln.conv2d %x, %v1 stride [1, 1] pad [1, 1, 1, 1] : (tensor<?x4x4x2xf32>, tensor<3x3x2x4xf32>) -> tensor<?x4x4x4xf32>
    %v3 = kiln.reshape %v2 : tensor<?x4x4x4xf32> to tensor<?x8x4x2xf32>
    %v4 = kiln.read @reshape.b : tensor<3x3x2x3xf32>
    %v5 = kiln.conv2d %v3, %v4 stride [2, 1] pad [1, 1, 1, 1] : (tensor<?x8x4x2xf32>, tensor<3x3x2x3xf32>) -> tensor<?x4x4x3xf32>
    %v6 = kiln.reshape %v5 : tensor<?x4x4x3xf32> to tensor<?x48xf32>
    %v7 = kiln.read @reshape.fc : tensor<48x3xf32>
    %v8 = kiln.dense %v6, %v7 : (tensor<?x48xf32>, tensor<48x3xf32>) -> tensor<?x3xf32>
    %loss = kiln.softmax_cross_entropy %v8, %labels : (tensor<?x3xf32>, tensor<?xi32>) -> tensor<f32>
    return %loss, %v8 : tensor<f32>, tensor<?x3xf32>
  }
}

// -----

// CHECK-LABEL: @cast.a 3x3x2x3xf32: 16/54 elements, max |grad| {{[-+.e0-9]+}}, error {{[-+.e0-9]+}} ok{{$}}
// CHECK: @cast.b 3x3x3x3xf32: 16/81 elements, max |grad| {{[-+.e0-9]+}}, error {{[-+.e0-9]+}} ok{{$}}
// CHECK: @cast.fc 48x3xf32: 16/144 elements, max |grad| {{[-+.e0-9]+}}, error {{[-+.e0-9]+}} ok{{$}}
// CHECK: gradient check passed: 3 parameters (0 unchecked)
module {
  kiln.variable parameter @cast.a : tensor<3x3x2x3xf32> init he_normal
  kiln.variable parameter @cast.b : tensor<3x3x3x3xf32> init he_normal
  kiln.variable parameter @cast.fc : tensor<48x3xf32> init normal std 1.000000e-01
  func.func @forward(%x: tensor<?x4x4x2xf32>, %labels: tensor<?xi32>) -> (tensor<f32>, tensor<?x3xf32>) {
    %v1 = kiln.read @cast.a : tensor<3x3x2x3xf32>
    %v2 = kiln.conv2d %x, %v1 stride [1, 1] pad [1, 1, 1, 1] : (tensor<?x4x4x2xf32>, tensor<3x3x2x3xf32>) -> tensor<?x4x4x3xf32>
    %v3 = kiln.cast %v2 : tensor<?x4x4x3xf32> to tensor<?x4x4x3xbf16>
    %v4 = kiln.relu %v3 : tensor<?x4x4x3xbf16>
    %v5 = kiln.cast %v4 : tensor<?x4x4x3xbf16> to tensor<?x4x4x3xf32>
    %v6 = kiln.read @cast.b : tensor<3x3x3x3xf32>
    %v7 = kiln.conv2d %v5, %v6 stride [1, 1] pad [1, 1, 1, 1] : (tensor<?x4x4x3xf32>, tensor<3x3x3x3xf32>) -> tensor<?x4x4x3xf32>
    %v8 = kiln.reshape %v7 : tensor<?x4x4x3xf32> to tensor<?x48xf32>
    %v9 = kiln.read @cast.fc : tensor<48x3xf32>
    %v10 = kiln.dense %v8, %v9 : (tensor<?x48xf32>, tensor<48x3xf32>) -> tensor<?x3xf32>
    %loss = kiln.softmax_cross_entropy %v10, %labels : (tensor<?x3xf32>, tensor<?xi32>) -> tensor<f32>
    return %loss, %v10 : tensor<f32>, tensor<?x3xf32>
  }
}
