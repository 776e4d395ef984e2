// The lowered step reaches the LLVM dialect with its C interface.
// RUN: kiln-opt %s --kiln-lower-to-linalg --kiln-lower-to-llvm | FileCheck %s
// CHECK: llvm.func @kiln_rt_kernel_call(!llvm.ptr, i32)
// CHECK: llvm.func @kiln_model_eval_step(
// CHECK: llvm.func @_mlir_ciface_kiln_model_eval_step(%{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr)
// CHECK-NOT: linalg.
// CHECK-NOT: memref.
module @m {
  kiln.variable parameter @w : tensor<8x3xf32> init he_normal
  func.func @eval_step(%x: tensor<2x8xf32>, %labels: tensor<2xi32>) -> (tensor<f32>, tensor<2x3xf32>) {
    %w = kiln.read @w : tensor<8x3xf32>
    %y = kiln.dense %x, %w : (tensor<2x8xf32>, tensor<8x3xf32>) -> tensor<2x3xf32>
    %r = kiln.relu %y : tensor<2x3xf32>
    %l = kiln.softmax_cross_entropy %r, %labels : (tensor<2x3xf32>, tensor<2xi32>) -> tensor<f32>
    return %l, %r : tensor<f32>, tensor<2x3xf32>
  }
}
