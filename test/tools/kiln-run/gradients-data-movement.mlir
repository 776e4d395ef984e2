// Gradient checks of the data-movement ops through --kiln-autodiff: a
// ShuffleNet-style unit (a channel split into two slices, one branch
// convolved, concatenated back and shuffled), the split value also used
// whole (its gradient sums both slices' backward ops and the add's), a
// spatial slice, and a flatten in NCHW order (transpose, then reshape).
// RUN: kiln-opt %s --kiln-autodiff | kiln-run --check-gradients --synthetic-inputs --batch=2 | FileCheck %s
// The negative cases: a hand-written step is right as written, and the
// checker catches a shuffle gradient that repeats the forward permutation
// and a slice gradient placed at the wrong offset.
// RUN: kiln-run %S/Inputs/data_movement_step.mlir --check-gradients --synthetic-inputs --batch=2 | FileCheck %s --check-prefix=RIGHT
// RUN: sed 's/groups 3/groups 2/' %S/Inputs/data_movement_step.mlir \
// RUN:   | not kiln-run - --check-gradients --synthetic-inputs --batch=2 | FileCheck %s --check-prefix=WRONG
// RUN: sed 's/start 2 input_size/start 0 input_size/' %S/Inputs/data_movement_step.mlir \
// RUN:   | not kiln-run - --check-gradients --synthetic-inputs --batch=2 | FileCheck %s --check-prefix=WRONG
// RIGHT: @move.conv 1x1x2x8xf32: 16/16 elements, max |grad| {{.*}}, error {{[-+.e0-9]+}} ok{{$}}
// RIGHT: gradient check passed: 2 parameters (0 unchecked)
// WRONG: @move.conv 1x1x2x8xf32: 16/16 elements, max |grad| {{.*}}, error {{[-+.e0-9]+}} FAILED

// CHECK-LABEL: @split.conv1 3x3x2x8xf32: 16/144 elements, max |grad| {{[-+.e0-9]+}}, error {{[-+.e0-9]+}} ok{{$}}
// CHECK: @split.conv2 3x3x5x5xf32: 16/225 elements, max |grad| {{[-+.e0-9]+}}, error {{[-+.e0-9]+}} ok{{$}}
// CHECK: @split.fc 64x3xf32: 16/192 elements, max |grad| {{[-+.e0-9]+}}, error {{[-+.e0-9]+}} ok{{$}}
// CHECK: gradient check passed: 3 parameters (0 unchecked)
module {
  kiln.variable parameter @split.conv1 : tensor<3x3x2x8xf32> init he_normal
  kiln.variable parameter @split.conv2 : tensor<3x3x5x5xf32> init he_normal
  kiln.variable parameter @split.fc : tensor<64x3xf32> init normal std 1.000000e-01
  func.func @forward(%x: tensor<?x4x4x2xf32>, %labels: tensor<?xi32>) -> (tensor<f32>, tensor<?x3xf32>) {
    %w1 = kiln.read @split.conv1 : tensor<3x3x2x8xf32>
    %c1 = kiln.conv2d %x, %w1 stride [1, 1] pad [1, 1, 1, 1] : (tensor<?x4x4x2xf32>, tensor<3x3x2x8xf32>) -> tensor<?x4x4x8xf32>
    %a = kiln.activation silu %c1 : tensor<?x4x4x8xf32>
    %s1 = kiln.slice %a axis 3 start 0 size 3 : (tensor<?x4x4x8xf32>) -> tensor<?x4x4x3xf32>
    %s2 = kiln.slice %a axis 3 start 3 size 5 : (tensor<?x4x4x8xf32>) -> tensor<?x4x4x5xf32>
    %w2 = kiln.read @split.conv2 : tensor<3x3x5x5xf32>
    %c2 = kiln.conv2d %s2, %w2 stride [1, 1] pad [1, 1, 1, 1] : (tensor<?x4x4x5xf32>, tensor<3x3x5x5xf32>) -> tensor<?x4x4x5xf32>
    %a2 = kiln.activation silu %c2 : tensor<?x4x4x5xf32>
    %cat = kiln.concat %s1, %a2 axis 3 : (tensor<?x4x4x3xf32>, tensor<?x4x4x5xf32>) -> tensor<?x4x4x8xf32>
    %sh = kiln.channel_shuffle %cat groups 2 : tensor<?x4x4x8xf32>
    %sum = kiln.add %sh, %a : tensor<?x4x4x8xf32>
    %rows = kiln.slice %sum axis 1 start 1 size 2 : (tensor<?x4x4x8xf32>) -> tensor<?x2x4x8xf32>
    %t = kiln.transpose %rows permutation [0, 3, 1, 2] : (tensor<?x2x4x8xf32>) -> tensor<?x8x2x4xf32>
    %f = kiln.reshape %t : tensor<?x8x2x4xf32> to tensor<?x64xf32>
    %wf = kiln.read @split.fc : tensor<64x3xf32>
    %l = kiln.dense %f, %wf : (tensor<?x64xf32>, tensor<64x3xf32>) -> tensor<?x3xf32>
    %loss = kiln.softmax_cross_entropy %l, %labels : (tensor<?x3xf32>, tensor<?xi32>) -> tensor<f32>
    return %loss, %l : tensor<f32>, tensor<?x3xf32>
  }
}
