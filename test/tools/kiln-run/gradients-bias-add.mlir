// Gradient checks of kiln.bias_add through --kiln-autodiff: convolution
// biases (4-D) and a dense layer's bias added by bias_add (2-D).
// RUN: kiln-opt %s -split-input-file --kiln-autodiff | kiln-run -split-input-file --check-gradients --synthetic-inputs --batch=2 | FileCheck %s
// The negative case: a hand-written step whose bias gradient sums the
// logits instead of their gradient fails; corrected, it passes.
// RUN: not kiln-run %S/Inputs/bias_add_wrong.mlir --check-gradients --synthetic-inputs --batch=2 | FileCheck %s --check-prefix=WRONG
// RUN: sed 's/kiln.bias_add_backward %%l/kiln.bias_add_backward %%dl/' %S/Inputs/bias_add_wrong.mlir \
// RUN:   | kiln-run - --check-gradients --synthetic-inputs --batch=2 | FileCheck %s --check-prefix=RIGHT
// WRONG: @fc.bias 3xf32: 3/3 elements, max |grad| {{.*}}, error {{[-+.e0-9]+}} FAILED
// RIGHT: @fc.bias 3xf32: 3/3 elements, max |grad| {{.*}}, error {{[-+.e0-9]+}} ok{{$}}
// RIGHT: gradient check passed: 2 parameters (0 unchecked)

// CHECK-LABEL: @bias.conv1 3x3x2x3xf32: 16/54 elements, max |grad| {{[-+.e0-9]+}}, error {{[-+.e0-9]+}} ok{{$}}
// CHECK: @bias.conv1.bias 3xf32: 3/3 elements, max |grad| {{[-+.e0-9]+}}, error {{[-+.e0-9]+}} ok{{$}}
// CHECK: @bias.conv2 3x3x3x3xf32: 16/81 elements, max |grad| {{[-+.e0-9]+}}, error {{[-+.e0-9]+}} ok{{$}}
// CHECK: @bias.conv2.bias 3xf32: 3/3 elements, max |grad| {{[-+.e0-9]+}}, error {{[-+.e0-9]+}} ok{{$}}
// CHECK: @bias.fc 12x3xf32: 16/36 elements, max |grad| {{[-+.e0-9]+}}, error {{[-+.e0-9]+}} ok{{$}}
// CHECK: @bias.fc.bias 3xf32: 3/3 elements, max |grad| {{[-+.e0-9]+}}, error {{[-+.e0-9]+}} ok{{$}}
// CHECK: gradient check passed: 6 parameters (0 unchecked)
module {
  kiln.variable parameter @bias.conv1 : tensor<3x3x2x3xf32> init he_normal
  kiln.variable parameter @bias.conv1.bias : tensor<3xf32> init constant value dense<[1.0e-01, -2.0e-01, 3.0e-01]> : tensor<3xf32>
  kiln.variable parameter @bias.conv2 : tensor<3x3x3x3xf32> init he_normal
  kiln.variable parameter @bias.conv2.bias : tensor<3xf32> init constant value dense<[-1.0e-01, 2.0e-01, 0.0]> : tensor<3xf32>
  kiln.variable parameter @bias.fc : tensor<12x3xf32> init normal std 1.000000e-01
  kiln.variable parameter @bias.fc.bias : tensor<3xf32> init constant value dense<[1.0e-01, 0.0, -1.0e-01]> : tensor<3xf32>
  func.func @forward(%x: tensor<?x4x4x2xf32>, %labels: tensor<?xi32>) -> (tensor<f32>, tensor<?x3xf32>) {
    %w1 = kiln.read @bias.conv1 : tensor<3x3x2x3xf32>
    %c1 = kiln.conv2d %x, %w1 stride [1, 1] pad [1, 1, 1, 1] : (tensor<?x4x4x2xf32>, tensor<3x3x2x3xf32>) -> tensor<?x4x4x3xf32>
    %b1 = kiln.read @bias.conv1.bias : tensor<3xf32>
    %y1 = kiln.bias_add %c1, %b1 : (tensor<?x4x4x3xf32>, tensor<3xf32>) -> tensor<?x4x4x3xf32>
    %a1 = kiln.activation silu %y1 : tensor<?x4x4x3xf32>
    %w2 = kiln.read @bias.conv2 : tensor<3x3x3x3xf32>
    %c2 = kiln.conv2d %a1, %w2 stride [2, 2] pad [1, 1, 1, 1] : (tensor<?x4x4x3xf32>, tensor<3x3x3x3xf32>) -> tensor<?x2x2x3xf32>
    %b2 = kiln.read @bias.conv2.bias : tensor<3xf32>
    %y2 = kiln.bias_add %c2, %b2 : (tensor<?x2x2x3xf32>, tensor<3xf32>) -> tensor<?x2x2x3xf32>
    %f = kiln.reshape %y2 : tensor<?x2x2x3xf32> to tensor<?x12xf32>
    %wf = kiln.read @bias.fc : tensor<12x3xf32>
    %d = kiln.dense %f, %wf : (tensor<?x12xf32>, tensor<12x3xf32>) -> tensor<?x3xf32>
    %bf = kiln.read @bias.fc.bias : tensor<3xf32>
    %l = kiln.bias_add %d, %bf : (tensor<?x3xf32>, tensor<3xf32>) -> tensor<?x3xf32>
    %loss = kiln.softmax_cross_entropy %l, %labels : (tensor<?x3xf32>, tensor<?xi32>) -> tensor<f32>
    return %loss, %l : tensor<f32>, tensor<?x3xf32>
  }
}
