// Gradient checks of batch_norm_train (4-D after a convolution, and 2-D
// after a dense layer) through --kiln-autodiff: scale, offset and the
// gradient into the layer below. The running statistics are assigned; the
// check must not apply those assigns between its evaluations.
// RUN: kiln-opt %s -split-input-file --kiln-autodiff | kiln-run -split-input-file --check-gradients --synthetic-inputs --batch=3 | FileCheck %s

// CHECK-LABEL: @bn4d.a 3x3x2x3xf32: 16/54 elements, max |grad| {{[-+.e0-9]+}}, error {{[-+.e0-9]+}} ok{{$}}
// CHECK: @bn4d.gamma 3xf32: 3/3 elements, max |grad| {{[-+.e0-9]+}}, error {{[-+.e0-9]+}} ok{{$}}
// CHECK: @bn4d.beta 3xf32: 3/3 elements, max |grad| {{[-+.e0-9]+}}, error {{[-+.e0-9]+}} ok{{$}}
// CHECK: @bn4d.fc 48x3xf32: 16/144 elements, max |grad| {{[-+.e0-9]+}}, error {{[-+.e0-9]+}} ok{{$}}
// CHECK: gradient check passed: 4 parameters (0 unchecked)
module {
  kiln.variable parameter @bn4d.a : tensor<3x3x2x3xf32> init he_normal
  kiln.variable parameter @bn4d.gamma : tensor<3xf32> init normal std 1.000000e+00
  kiln.variable parameter @bn4d.beta : tensor<3xf32> init normal std 5.000000e-01
  kiln.variable state @bn4d.mean : tensor<3xf32> init zeros
  kiln.variable state @bn4d.var : tensor<3xf32> init ones
  kiln.variable parameter @bn4d.fc : tensor<48x3xf32> init normal std 1.000000e-01
  func.func @forward(%x: tensor<?x4x4x2xf32>, %labels: tensor<?xi32>) -> (tensor<f32>, tensor<?x3xf32>) {
    %v1 = kiln.read @bn4d.a : tensor<3x3x2x3xf32>
    %v2 = kiln.conv2d %x, %v1 stride [1, 1] pad [1, 1, 1, 1] : (tensor<?x4x4x2xf32>, tensor<3x3x2x3xf32>) -> tensor<?x4x4x3xf32>
    %v3 = kiln.read @bn4d.gamma : tensor<3xf32>
    %v4 = kiln.read @bn4d.beta : tensor<3xf32>
    %v5 = kiln.read @bn4d.mean : tensor<3xf32>
    %v6 = kiln.read @bn4d.var : tensor<3xf32>
    %y, %bm, %bv, %nm, %nv = kiln.batch_norm_train %v2, %v3, %v4, %v5, %v6 epsilon 1.000000e-05 momentum 0.899999976 : (tensor<?x4x4x3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> (tensor<?x4x4x3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>)
    kiln.assign @bn4d.mean, %nm : tensor<3xf32>
    kiln.assign @bn4d.var, %nv : tensor<3xf32>
    %v7 = kiln.relu %y : tensor<?x4x4x3xf32>
    %v8 = kiln.reshape %v7 : tensor<?x4x4x3xf32> to tensor<?x48xf32>
    %v9 = kiln.read @bn4d.fc : tensor<48x3xf32>
    %v10 = kiln.dense %v8, %v9 : (tensor<?x48xf32>, tensor<48x3xf32>) -> tensor<?x3xf32>
    %loss = kiln.softmax_cross_entropy %v10, %labels : (tensor<?x3xf32>, tensor<?xi32>) -> tensor<f32>
    return %loss, %v10 : tensor<f32>, tensor<?x3xf32>
  }
}

// -----

// CHECK-LABEL: @bn2d.w 5x3xf32: 15/15 elements, max |grad| {{[-+.e0-9]+}}, error {{[-+.e0-9]+}} ok{{$}}
// CHECK: @bn2d.gamma 3xf32: 3/3 elements, max |grad| {{[-+.e0-9]+}}, error {{[-+.e0-9]+}} ok{{$}}
// CHECK: @bn2d.beta 3xf32: 3/3 elements, max |grad| {{[-+.e0-9]+}}, error {{[-+.e0-9]+}} ok{{$}}
// CHECK: @bn2d.fc 3x3xf32: 9/9 elements, max |grad| {{[-+.e0-9]+}}, error {{[-+.e0-9]+}} ok{{$}}
// CHECK: gradient check passed: 4 parameters (0 unchecked)
module {
  kiln.variable parameter @bn2d.w : tensor<5x3xf32> init he_normal
  kiln.variable parameter @bn2d.gamma : tensor<3xf32> init normal std 1.000000e+00
  kiln.variable parameter @bn2d.beta : tensor<3xf32> init normal std 5.000000e-01
  kiln.variable state @bn2d.mean : tensor<3xf32> init zeros
  kiln.variable state @bn2d.var : tensor<3xf32> init ones
  kiln.variable parameter @bn2d.fc : tensor<3x3xf32> init normal std 1.000000e+00
  func.func @forward(%x: tensor<?x5xf32>, %labels: tensor<?xi32>) -> (tensor<f32>, tensor<?x3xf32>) {
    %v1 = kiln.read @bn2d.w : tensor<5x3xf32>
    %v2 = kiln.dense %x, %v1 : (tensor<?x5xf32>, tensor<5x3xf32>) -> tensor<?x3xf32>
    %v3 = kiln.read @bn2d.gamma : tensor<3xf32>
    %v4 = kiln.read @bn2d.beta : tensor<3xf32>
    %v5 = kiln.read @bn2d.mean : tensor<3xf32>
    %v6 = kiln.read @bn2d.var : tensor<3xf32>
    %y, %bm, %bv, %nm, %nv = kiln.batch_norm_train %v2, %v3, %v4, %v5, %v6 epsilon 1.000000e-05 momentum 0.899999976 : (tensor<?x3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> (tensor<?x3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>)
    kiln.assign @bn2d.mean, %nm : tensor<3xf32>
    kiln.assign @bn2d.var, %nv : tensor<3xf32>
    %v7 = kiln.read @bn2d.fc : tensor<3x3xf32>
    %v8 = kiln.dense %y, %v7 : (tensor<?x3xf32>, tensor<3x3xf32>) -> tensor<?x3xf32>
    %loss = kiln.softmax_cross_entropy %v8, %labels : (tensor<?x3xf32>, tensor<?xi32>) -> tensor<f32>
    return %loss, %v8 : tensor<f32>, tensor<?x3xf32>
  }
}
