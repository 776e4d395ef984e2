// RUN: kiln-opt %s --kiln-lower-to-linalg --mlir-print-debuginfo | FileCheck %s

// What the lowering emits for a kiln op carries the op's name and its layer
// (passes/Analysis/LayerNames.h), from which kiln-outline-parallel-loops
// writes the manifest's sites: the dense layer is `fc` (its weight
// `fc.weight`), the ReLU on its output joins it, the loss is `loss`; the
// ReLU on the step's input alone has no layer (negative case: no
// kiln.layer in its location).
// CHECK: #[[INLINE:loc[0-9]+]] = loc("{{.*}}kiln-lower-to-linalg-layers.mlir":{{[0-9]+}}:11)
// CHECK: = loc("kiln.relu"(#[[INLINE]]))
// CHECK: #[[FC1:loc[0-9]+]] = loc(fused<{kiln.layer = "fc"}>[#{{loc[0-9]+}}])
// CHECK: #[[FC2:loc[0-9]+]] = loc(fused<{kiln.layer = "fc"}>[#{{loc[0-9]+}}])
// CHECK: #[[LOSS:loc[0-9]+]] = loc(fused<{kiln.layer = "loss"}>[#{{loc[0-9]+}}])
// CHECK: = loc("kiln.dense"(#[[FC1]]))
// CHECK: = loc("kiln.relu"(#[[FC2]]))
// CHECK: = loc("kiln.softmax_cross_entropy"(#[[LOSS]]))
module @tiny {
  kiln.variable parameter @fc.weight : tensor<4x4xf32> init he_normal
  func.func @eval_step(%x: tensor<2x4xf32>, %labels: tensor<2xi32>) -> (tensor<f32>, tensor<2x4xf32>) {
    %w = kiln.read @fc.weight : tensor<4x4xf32>
    %in = kiln.relu %x : tensor<2x4xf32>
    %y = kiln.dense %in, %w : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
    %r = kiln.relu %y : tensor<2x4xf32>
    %loss = kiln.softmax_cross_entropy %r, %labels : (tensor<2x4xf32>, tensor<2xi32>) -> tensor<f32>
    return %loss, %r : tensor<f32>, tensor<2x4xf32>
  }
}
