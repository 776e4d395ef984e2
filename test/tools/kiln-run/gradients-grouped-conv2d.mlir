// Gradient checks of grouped and depthwise conv2d (backward data and filter
// with `groups`) through --kiln-autodiff: a grouped convolution (2 groups),
// a depthwise one (groups = channels), one with channel multiplier 2, and a
// depthwise one with a bias folded in (as --kiln-fuse writes it), each
// stacked on an ordinary convolution so that its data gradient is checked
// too, then a per-position classifier (reshape + dense).
// RUN: kiln-opt %s -split-input-file --kiln-autodiff | kiln-run -split-input-file --check-gradients --synthetic-inputs --batch=2 | FileCheck %s

// CHECK-LABEL: @grouped.a 3x3x2x4xf32: 16/72 elements, max |grad| {{[-+.e0-9]+}}, error {{[-+.e0-9]+}} ok{{$}}
// CHECK: @grouped.b 3x3x2x6xf32: 16/108 elements, max |grad| {{[-+.e0-9]+}}, error {{[-+.e0-9]+}} ok{{$}}
// CHECK: @grouped.fc 216x3xf32: 16/648 elements, max |grad| {{[-+.e0-9]+}}, error {{[-+.e0-9]+}} ok{{$}}
// CHECK: gradient check passed: 3 parameters (0 unchecked)
module {
  kiln.variable parameter @grouped.a : tensor<3x3x2x4xf32> init he_normal
  kiln.variable parameter @grouped.b : tensor<3x3x2x6xf32> init he_normal
  kiln.variable parameter @grouped.fc : tensor<216x3xf32> init normal std 1.000000e-01
  func.func @forward(%x: tensor<?x6x6x2xf32>, %labels: tensor<?xi32>) -> (tensor<f32>, tensor<?x3xf32>) {
    %v1 = kiln.read @grouped.a : tensor<3x3x2x4xf32>
    %v2 = kiln.conv2d %x, %v1 stride [1, 1] pad [1, 1, 1, 1] : (tensor<?x6x6x2xf32>, tensor<3x3x2x4xf32>) -> tensor<?x6x6x4xf32>
    %v3 = kiln.read @grouped.b : tensor<3x3x2x6xf32>
    %v4 = kiln.conv2d %v2, %v3 stride [1, 1] pad [1, 1, 1, 1] groups 2 : (tensor<?x6x6x4xf32>, tensor<3x3x2x6xf32>) -> tensor<?x6x6x6xf32>
    %v5 = kiln.reshape %v4 : tensor<?x6x6x6xf32> to tensor<?x216xf32>
    %v6 = kiln.read @grouped.fc : tensor<216x3xf32>
    %v7 = kiln.dense %v5, %v6 : (tensor<?x216xf32>, tensor<216x3xf32>) -> tensor<?x3xf32>
    %loss = kiln.softmax_cross_entropy %v7, %labels : (tensor<?x3xf32>, tensor<?xi32>) -> tensor<f32>
    return %loss, %v7 : tensor<f32>, tensor<?x3xf32>
  }
}

// -----

// CHECK-LABEL: @depthwise.a 3x3x2x3xf32: 16/54 elements, max |grad| {{[-+.e0-9]+}}, error {{[-+.e0-9]+}} ok{{$}}
// CHECK: @depthwise.b 3x3x1x3xf32: 16/27 elements, max |grad| {{[-+.e0-9]+}}, error {{[-+.e0-9]+}} ok{{$}}
// CHECK: @depthwise.fc 27x3xf32: 16/81 elements, max |grad| {{[-+.e0-9]+}}, error {{[-+.e0-9]+}} ok{{$}}
// CHECK: gradient check passed: 3 parameters (0 unchecked)
module {
  kiln.variable parameter @depthwise.a : tensor<3x3x2x3xf32> init he_normal
  kiln.variable parameter @depthwise.b : tensor<3x3x1x3xf32> init he_normal
  kiln.variable parameter @depthwise.fc : tensor<27x3xf32> init normal std 1.000000e-01
  func.func @forward(%x: tensor<?x6x6x2xf32>, %labels: tensor<?xi32>) -> (tensor<f32>, tensor<?x3xf32>) {
    %v1 = kiln.read @depthwise.a : tensor<3x3x2x3xf32>
    %v2 = kiln.conv2d %x, %v1 stride [1, 1] pad [1, 1, 1, 1] : (tensor<?x6x6x2xf32>, tensor<3x3x2x3xf32>) -> tensor<?x6x6x3xf32>
    %v3 = kiln.read @depthwise.b : tensor<3x3x1x3xf32>
    %v4 = kiln.conv2d %v2, %v3 stride [2, 2] pad [1, 1, 1, 1] groups 3 : (tensor<?x6x6x3xf32>, tensor<3x3x1x3xf32>) -> tensor<?x3x3x3xf32>
    %v5 = kiln.reshape %v4 : tensor<?x3x3x3xf32> to tensor<?x27xf32>
    %v6 = kiln.read @depthwise.fc : tensor<27x3xf32>
    %v7 = kiln.dense %v5, %v6 : (tensor<?x27xf32>, tensor<27x3xf32>) -> tensor<?x3xf32>
    %loss = kiln.softmax_cross_entropy %v7, %labels : (tensor<?x3xf32>, tensor<?xi32>) -> tensor<f32>
    return %loss, %v7 : tensor<f32>, tensor<?x3xf32>
  }
}

// -----

// CHECK-LABEL: @multiplier.a 3x3x2x2xf32: 16/36 elements, max |grad| {{[-+.e0-9]+}}, error {{[-+.e0-9]+}} ok{{$}}
// CHECK: @multiplier.b 3x3x1x4xf32: 16/36 elements, max |grad| {{[-+.e0-9]+}}, error {{[-+.e0-9]+}} ok{{$}}
// CHECK: @multiplier.fc 100x3xf32: 16/300 elements, max |grad| {{[-+.e0-9]+}}, error {{[-+.e0-9]+}} ok{{$}}
// CHECK: gradient check passed: 3 parameters (0 unchecked)
module {
  kiln.variable parameter @multiplier.a : tensor<3x3x2x2xf32> init he_normal
  kiln.variable parameter @multiplier.b : tensor<3x3x1x4xf32> init he_normal
  kiln.variable parameter @multiplier.fc : tensor<100x3xf32> init normal std 1.000000e-01
  func.func @forward(%x: tensor<?x6x6x2xf32>, %labels: tensor<?xi32>) -> (tensor<f32>, tensor<?x3xf32>) {
    %v1 = kiln.read @multiplier.a : tensor<3x3x2x2xf32>
    %v2 = kiln.conv2d %x, %v1 stride [1, 1] pad [1, 1, 1, 1] : (tensor<?x6x6x2xf32>, tensor<3x3x2x2xf32>) -> tensor<?x6x6x2xf32>
    %v3 = kiln.read @multiplier.b : tensor<3x3x1x4xf32>
    %v4 = kiln.conv2d %v2, %v3 stride [1, 1] pad [1, 2, 2, 1] dilation [2, 2] groups 2 : (tensor<?x6x6x2xf32>, tensor<3x3x1x4xf32>) -> tensor<?x5x5x4xf32>
    %v5 = kiln.reshape %v4 : tensor<?x5x5x4xf32> to tensor<?x100xf32>
    %v6 = kiln.read @multiplier.fc : tensor<100x3xf32>
    %v7 = kiln.dense %v5, %v6 : (tensor<?x100xf32>, tensor<100x3xf32>) -> tensor<?x3xf32>
    %loss = kiln.softmax_cross_entropy %v7, %labels : (tensor<?x3xf32>, tensor<?xi32>) -> tensor<f32>
    return %loss, %v7 : tensor<f32>, tensor<?x3xf32>
  }
}

// -----

// CHECK-LABEL: @biased.a 3x3x2x3xf32: 16/54 elements, max |grad| {{[-+.e0-9]+}}, error {{[-+.e0-9]+}} ok{{$}}
// CHECK: @biased.b 3x3x1x3xf32: 16/27 elements, max |grad| {{[-+.e0-9]+}}, error {{[-+.e0-9]+}} ok{{$}}
// CHECK: @biased.bias 3xf32: 3/3 elements, max |grad| {{[-+.e0-9]+}}, error {{[-+.e0-9]+}} ok{{$}}
// CHECK: @biased.fc 108x3xf32: 16/324 elements, max |grad| {{[-+.e0-9]+}}, error {{[-+.e0-9]+}} ok{{$}}
// CHECK: gradient check passed: 4 parameters (0 unchecked)
module {
  kiln.variable parameter @biased.a : tensor<3x3x2x3xf32> init he_normal
  kiln.variable parameter @biased.b : tensor<3x3x1x3xf32> init he_normal
  kiln.variable parameter @biased.bias : tensor<3xf32> init normal std 1.000000e-01
  kiln.variable parameter @biased.fc : tensor<108x3xf32> init normal std 1.000000e-01
  func.func @forward(%x: tensor<?x6x6x2xf32>, %labels: tensor<?xi32>) -> (tensor<f32>, tensor<?x3xf32>) {
    %v1 = kiln.read @biased.a : tensor<3x3x2x3xf32>
    %v2 = kiln.conv2d %x, %v1 stride [1, 1] pad [1, 1, 1, 1] : (tensor<?x6x6x2xf32>, tensor<3x3x2x3xf32>) -> tensor<?x6x6x3xf32>
    %v3 = kiln.read @biased.b : tensor<3x3x1x3xf32>
    %b = kiln.read @biased.bias : tensor<3xf32>
    %v4 = kiln.conv2d %v2, %v3 bias %b stride [1, 1] pad [1, 1, 1, 1] groups 3 : (tensor<?x6x6x3xf32>, tensor<3x3x1x3xf32>, tensor<3xf32>) -> tensor<?x6x6x3xf32>
    %v5 = kiln.reshape %v4 : tensor<?x6x6x3xf32> to tensor<?x108xf32>
    %v6 = kiln.read @biased.fc : tensor<108x3xf32>
    %v7 = kiln.dense %v5, %v6 : (tensor<?x108xf32>, tensor<108x3xf32>) -> tensor<?x3xf32>
    %loss = kiln.softmax_cross_entropy %v7, %labels : (tensor<?x3xf32>, tensor<?xi32>) -> tensor<f32>
    return %loss, %v7 : tensor<f32>, tensor<?x3xf32>
  }
}
