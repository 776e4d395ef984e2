// Gradient check of kiln.dropout through --kiln-autodiff: the mask is fixed
// by the seed, the step kiln-run passes and the stream, so the step is a
// smooth function of the parameters and finite differences see the
// gradient the regenerated mask gives. Two dropouts (4-D between the
// convolutions, 2-D before the dense layer) carry every parameter's
// gradient. gradients-dropout-wrong.mlir is the negative case.
// RUN: kiln-opt %s --kiln-autodiff | kiln-run - --check-gradients --synthetic-inputs --batch=2 | FileCheck %s
// RUN: kiln-opt %s --kiln-autodiff | kiln-run - --check-gradients --synthetic-inputs --batch=2 --first-step=41 | FileCheck %s

// CHECK: @a 3x3x2x3xf32: 16/54 elements, max |grad| {{[-+.e0-9]+}}, error {{[-+.e0-9]+}} ok{{$}}
// CHECK: @b 3x3x3x3xf32: 16/81 elements, max |grad| {{[-+.e0-9]+}}, error {{[-+.e0-9]+}} ok{{$}}
// CHECK: @fc 48x3xf32: 16/144 elements, max |grad| {{[-+.e0-9]+}}, error {{[-+.e0-9]+}} ok{{$}}
// CHECK: gradient check passed: 3 parameters (0 unchecked)
module {
  kiln.variable parameter @a : tensor<3x3x2x3xf32> init he_normal
  kiln.variable parameter @b : tensor<3x3x3x3xf32> init he_normal
  kiln.variable parameter @fc : tensor<48x3xf32> init normal std 1.000000e-01
  func.func @forward(%x: tensor<?x4x4x2xf32>, %labels: tensor<?xi32>, %step: tensor<i64> {kiln.step}) -> (tensor<f32>, tensor<?x3xf32>) {
    %v1 = kiln.read @a : tensor<3x3x2x3xf32>
    %v2 = kiln.conv2d %x, %v1 stride [1, 1] pad [1, 1, 1, 1] : (tensor<?x4x4x2xf32>, tensor<3x3x2x3xf32>) -> tensor<?x4x4x3xf32>
    %v3 = kiln.dropout %v2, %step ratio 3.000000e-01 seed 5 stream 0 : tensor<?x4x4x3xf32>, tensor<i64>
    %v4 = kiln.read @b : tensor<3x3x3x3xf32>
    %v5 = kiln.conv2d %v3, %v4 stride [1, 1] pad [1, 1, 1, 1] : (tensor<?x4x4x3xf32>, tensor<3x3x3x3xf32>) -> tensor<?x4x4x3xf32>
    %v6 = kiln.reshape %v5 : tensor<?x4x4x3xf32> to tensor<?x48xf32>
    %v7 = kiln.dropout %v6, %step ratio 5.000000e-01 seed 5 stream 1 : tensor<?x48xf32>, tensor<i64>
    %v8 = kiln.read @fc : tensor<48x3xf32>
    %v9 = kiln.dense %v7, %v8 : (tensor<?x48xf32>, tensor<48x3xf32>) -> tensor<?x3xf32>
    %loss = kiln.softmax_cross_entropy %v9, %labels : (tensor<?x3xf32>, tensor<?xi32>) -> tensor<f32>
    return %loss, %v9 : tensor<f32>, tensor<?x3xf32>
  }
}
