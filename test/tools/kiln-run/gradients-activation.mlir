// Gradient checks of kiln.activation, every kind, through --kiln-autodiff:
// a convolution, the activation, a convolution and a dense layer, so that
// the activation's backward carries both parameters' gradients below it.
// gradients-activation-wrong.mlir is the negative case.
// RUN: kiln-opt %s -split-input-file --kiln-autodiff | kiln-run -split-input-file --check-gradients --synthetic-inputs --batch=2 | FileCheck %s

// CHECK-LABEL: @sigmoid.a 3x3x2x3xf32: 16/54 elements, max |grad| {{[-+.e0-9]+}}, error {{[-+.e0-9]+}} ok{{$}}
// CHECK: @sigmoid.b 3x3x3x3xf32: 16/81 elements, max |grad| {{[-+.e0-9]+}}, error {{[-+.e0-9]+}} ok{{$}}
// CHECK: @sigmoid.fc 48x3xf32: 16/144 elements, max |grad| {{[-+.e0-9]+}}, error {{[-+.e0-9]+}} ok{{$}}
// CHECK: gradient check passed: 3 parameters (0 unchecked)
module {
  kiln.variable parameter @sigmoid.a : tensor<3x3x2x3xf32> init he_normal
  kiln.variable parameter @sigmoid.b : tensor<3x3x3x3xf32> init he_normal
  kiln.variable parameter @sigmoid.fc : tensor<48x3xf32> init normal std 1.000000e-01
  func.func @forward(%x: tensor<?x4x4x2xf32>, %labels: tensor<?xi32>) -> (tensor<f32>, tensor<?x3xf32>) {
    %v1 = kiln.read @sigmoid.a : tensor<3x3x2x3xf32>
    %v2 = kiln.conv2d %x, %v1 stride [1, 1] pad [1, 1, 1, 1] : (tensor<?x4x4x2xf32>, tensor<3x3x2x3xf32>) -> tensor<?x4x4x3xf32>
    %v3 = kiln.activation sigmoid %v2 : tensor<?x4x4x3xf32>
    %v4 = kiln.read @sigmoid.b : tensor<3x3x3x3xf32>
    %v5 = kiln.conv2d %v3, %v4 stride [1, 1] pad [1, 1, 1, 1] : (tensor<?x4x4x3xf32>, tensor<3x3x3x3xf32>) -> tensor<?x4x4x3xf32>
    %v6 = kiln.reshape %v5 : tensor<?x4x4x3xf32> to tensor<?x48xf32>
    %v7 = kiln.read @sigmoid.fc : tensor<48x3xf32>
    %v8 = kiln.dense %v6, %v7 : (tensor<?x48xf32>, tensor<48x3xf32>) -> tensor<?x3xf32>
    %loss = kiln.softmax_cross_entropy %v8, %labels : (tensor<?x3xf32>, tensor<?xi32>) -> tensor<f32>
    return %loss, %v8 : tensor<f32>, tensor<?x3xf32>
  }
}

// -----

// CHECK-LABEL: @silu.a 3x3x2x3xf32: 16/54 elements, max |grad| {{[-+.e0-9]+}}, error {{[-+.e0-9]+}} ok{{$}}
// CHECK: @silu.b 3x3x3x3xf32: 16/81 elements, max |grad| {{[-+.e0-9]+}}, error {{[-+.e0-9]+}} ok{{$}}
// CHECK: @silu.fc 48x3xf32: 16/144 elements, max |grad| {{[-+.e0-9]+}}, error {{[-+.e0-9]+}} ok{{$}}
// CHECK: gradient check passed: 3 parameters (0 unchecked)
module {
  kiln.variable parameter @silu.a : tensor<3x3x2x3xf32> init he_normal
  kiln.variable parameter @silu.b : tensor<3x3x3x3xf32> init he_normal
  kiln.variable parameter @silu.fc : tensor<48x3xf32> init normal std 1.000000e-01
  func.func @forward(%x: tensor<?x4x4x2xf32>, %labels: tensor<?xi32>) -> (tensor<f32>, tensor<?x3xf32>) {
    %v1 = kiln.read @silu.a : tensor<3x3x2x3xf32>
    %v2 = kiln.conv2d %x, %v1 stride [1, 1] pad [1, 1, 1, 1] : (tensor<?x4x4x2xf32>, tensor<3x3x2x3xf32>) -> tensor<?x4x4x3xf32>
    %v3 = kiln.activation silu %v2 : tensor<?x4x4x3xf32>
    %v4 = kiln.read @silu.b : tensor<3x3x3x3xf32>
    %v5 = kiln.conv2d %v3, %v4 stride [1, 1] pad [1, 1, 1, 1] : (tensor<?x4x4x3xf32>, tensor<3x3x3x3xf32>) -> tensor<?x4x4x3xf32>
    %v6 = kiln.reshape %v5 : tensor<?x4x4x3xf32> to tensor<?x48xf32>
    %v7 = kiln.read @silu.fc : tensor<48x3xf32>
    %v8 = kiln.dense %v6, %v7 : (tensor<?x48xf32>, tensor<48x3xf32>) -> tensor<?x3xf32>
    %loss = kiln.softmax_cross_entropy %v8, %labels : (tensor<?x3xf32>, tensor<?xi32>) -> tensor<f32>
    return %loss, %v8 : tensor<f32>, tensor<?x3xf32>
  }
}

// -----

// CHECK-LABEL: @relu6.a 3x3x2x3xf32: 16/54 elements, max |grad| {{[-+.e0-9]+}}, error {{[-+.e0-9]+}} ok{{$}}
// CHECK: @relu6.b 3x3x3x3xf32: 16/81 elements, max |grad| {{[-+.e0-9]+}}, error {{[-+.e0-9]+}} ok{{$}}
// CHECK: @relu6.fc 48x3xf32: 16/144 elements, max |grad| {{[-+.e0-9]+}}, error {{[-+.e0-9]+}} ok{{$}}
// CHECK: gradient check passed: 3 parameters (0 unchecked)
module {
  kiln.variable parameter @relu6.a : tensor<3x3x2x3xf32> init he_normal
  kiln.variable parameter @relu6.b : tensor<3x3x3x3xf32> init he_normal
  kiln.variable parameter @relu6.fc : tensor<48x3xf32> init normal std 1.000000e-01
  func.func @forward(%x: tensor<?x4x4x2xf32>, %labels: tensor<?xi32>) -> (tensor<f32>, tensor<?x3xf32>) {
    %v1 = kiln.read @relu6.a : tensor<3x3x2x3xf32>
    %v2 = kiln.conv2d %x, %v1 stride [1, 1] pad [1, 1, 1, 1] : (tensor<?x4x4x2xf32>, tensor<3x3x2x3xf32>) -> tensor<?x4x4x3xf32>
    %v3 = kiln.activation relu6 %v2 : tensor<?x4x4x3xf32>
    %v4 = kiln.read @relu6.b : tensor<3x3x3x3xf32>
    %v5 = kiln.conv2d %v3, %v4 stride [1, 1] pad [1, 1, 1, 1] : (tensor<?x4x4x3xf32>, tensor<3x3x3x3xf32>) -> tensor<?x4x4x3xf32>
    %v6 = kiln.reshape %v5 : tensor<?x4x4x3xf32> to tensor<?x48xf32>
    %v7 = kiln.read @relu6.fc : tensor<48x3xf32>
    %v8 = kiln.dense %v6, %v7 : (tensor<?x48xf32>, tensor<48x3xf32>) -> tensor<?x3xf32>
    %loss = kiln.softmax_cross_entropy %v8, %labels : (tensor<?x3xf32>, tensor<?xi32>) -> tensor<f32>
    return %loss, %v8 : tensor<f32>, tensor<?x3xf32>
  }
}

// -----

// CHECK-LABEL: @hard_sigmoid.a 3x3x2x3xf32: 16/54 elements, max |grad| {{[-+.e0-9]+}}, error {{[-+.e0-9]+}} ok{{$}}
// CHECK: @hard_sigmoid.b 3x3x3x3xf32: 16/81 elements, max |grad| {{[-+.e0-9]+}}, error {{[-+.e0-9]+}} ok{{$}}
// CHECK: @hard_sigmoid.fc 48x3xf32: 16/144 elements, max |grad| {{[-+.e0-9]+}}, error {{[-+.e0-9]+}} ok{{$}}
// CHECK: gradient check passed: 3 parameters (0 unchecked)
module {
  kiln.variable parameter @hard_sigmoid.a : tensor<3x3x2x3xf32> init he_normal
  kiln.variable parameter @hard_sigmoid.b : tensor<3x3x3x3xf32> init he_normal
  kiln.variable parameter @hard_sigmoid.fc : tensor<48x3xf32> init normal std 1.000000e-01
  func.func @forward(%x: tensor<?x4x4x2xf32>, %labels: tensor<?xi32>) -> (tensor<f32>, tensor<?x3xf32>) {
    %v1 = kiln.read @hard_sigmoid.a : tensor<3x3x2x3xf32>
    %v2 = kiln.conv2d %x, %v1 stride [1, 1] pad [1, 1, 1, 1] : (tensor<?x4x4x2xf32>, tensor<3x3x2x3xf32>) -> tensor<?x4x4x3xf32>
    %v3 = kiln.activation hard_sigmoid %v2 : tensor<?x4x4x3xf32>
    %v4 = kiln.read @hard_sigmoid.b : tensor<3x3x3x3xf32>
    %v5 = kiln.conv2d %v3, %v4 stride [1, 1] pad [1, 1, 1, 1] : (tensor<?x4x4x3xf32>, tensor<3x3x3x3xf32>) -> tensor<?x4x4x3xf32>
    %v6 = kiln.reshape %v5 : tensor<?x4x4x3xf32> to tensor<?x48xf32>
    %v7 = kiln.read @hard_sigmoid.fc : tensor<48x3xf32>
    %v8 = kiln.dense %v6, %v7 : (tensor<?x48xf32>, tensor<48x3xf32>) -> tensor<?x3xf32>
    %loss = kiln.softmax_cross_entropy %v8, %labels : (tensor<?x3xf32>, tensor<?xi32>) -> tensor<f32>
    return %loss, %v8 : tensor<f32>, tensor<?x3xf32>
  }
}

// -----

// CHECK-LABEL: @hard_swish.a 3x3x2x3xf32: 16/54 elements, max |grad| {{[-+.e0-9]+}}, error {{[-+.e0-9]+}} ok{{$}}
// CHECK: @hard_swish.b 3x3x3x3xf32: 16/81 elements, max |grad| {{[-+.e0-9]+}}, error {{[-+.e0-9]+}} ok{{$}}
// CHECK: @hard_swish.fc 48x3xf32: 16/144 elements, max |grad| {{[-+.e0-9]+}}, error {{[-+.e0-9]+}} ok{{$}}
// CHECK: gradient check passed: 3 parameters (0 unchecked)
module {
  kiln.variable parameter @hard_swish.a : tensor<3x3x2x3xf32> init he_normal
  kiln.variable parameter @hard_swish.b : tensor<3x3x3x3xf32> init he_normal
  kiln.variable parameter @hard_swish.fc : tensor<48x3xf32> init normal std 1.000000e-01
  func.func @forward(%x: tensor<?x4x4x2xf32>, %labels: tensor<?xi32>) -> (tensor<f32>, tensor<?x3xf32>) {
    %v1 = kiln.read @hard_swish.a : tensor<3x3x2x3xf32>
    %v2 = kiln.conv2d %x, %v1 stride [1, 1] pad [1, 1, 1, 1] : (tensor<?x4x4x2xf32>, tensor<3x3x2x3xf32>) -> tensor<?x4x4x3xf32>
    %v3 = kiln.activation hard_swish %v2 : tensor<?x4x4x3xf32>
    %v4 = kiln.read @hard_swish.b : tensor<3x3x3x3xf32>
    %v5 = kiln.conv2d %v3, %v4 stride [1, 1] pad [1, 1, 1, 1] : (tensor<?x4x4x3xf32>, tensor<3x3x3x3xf32>) -> tensor<?x4x4x3xf32>
    %v6 = kiln.reshape %v5 : tensor<?x4x4x3xf32> to tensor<?x48xf32>
    %v7 = kiln.read @hard_swish.fc : tensor<48x3xf32>
    %v8 = kiln.dense %v6, %v7 : (tensor<?x48xf32>, tensor<48x3xf32>) -> tensor<?x3xf32>
    %loss = kiln.softmax_cross_entropy %v8, %labels : (tensor<?x3xf32>, tensor<?xi32>) -> tensor<f32>
    return %loss, %v8 : tensor<f32>, tensor<?x3xf32>
  }
}
