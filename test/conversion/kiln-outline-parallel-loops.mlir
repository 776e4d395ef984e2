// RUN: kiln-opt %s --kiln-outline-parallel-loops=min-elements=64 | FileCheck %s

// A big parallel loop runs on the pool; a small one and a serial loop become
// kernels called directly; a loop that needs the runtime context stays.
// CHECK-LABEL: func.func private @kiln_rt_parallel_for(!llvm.ptr, (memref<?xi8>, index, index) -> (), memref<?xi8>, index, index)
// CHECK: func.func private @kiln_kernel_0(%[[A:.*]]: memref<?xi8>, %[[B:.*]]: index, %[[E:.*]]: index)
// CHECK: %[[V:.*]] = memref.view %[[A]]
// CHECK: scf.parallel (%{{.*}}) = (%[[B]]) to (%[[E]])
// CHECK: memref.store %{{.*}}, %[[V]]
// CHECK: func.func private @kiln_kernel_1(
// CHECK: scf.parallel
// CHECK: func.func private @kiln_kernel_2(
// CHECK: scf.for
// CHECK-LABEL: func.func @kiln_model_train_step
// CHECK-SAME: (%[[CTX:.*]]: !llvm.ptr, %[[ARENA:.*]]: memref<?xi8>)
// CHECK: %[[K0:.*]] = constant @kiln_kernel_0
// CHECK: call @kiln_rt_parallel_for(%[[CTX]], %[[K0]], %[[ARENA]], %{{.*}}, %{{.*}})
// CHECK: call @kiln_kernel_1(%[[ARENA]],
// CHECK: call @kiln_kernel_2(%[[ARENA]],
// Negative case: the loop calls the runtime with the context, so it stays.
// CHECK: scf.for
// CHECK: call @kiln_rt_kernel_call(%[[CTX]],
// CHECK-NOT: kiln_kernel_3
func.func private @kiln_rt_kernel_call(!llvm.ptr, i32)
func.func @kiln_model_train_step(%ctx: !llvm.ptr, %arena: memref<?xi8>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c256 = arith.constant 256 : index
  %one = arith.constant 1.0 : f32
  %big = memref.view %arena[%c0][] : memref<?xi8> to memref<256xf32>
  scf.parallel (%i) = (%c0) to (%c256) step (%c1) {
    memref.store %one, %big[%i] : memref<256xf32>
    scf.reduce
  }
  %small = memref.view %arena[%c0][] : memref<?xi8> to memref<4xf32>
  scf.parallel (%i) = (%c0) to (%c4) step (%c1) {
    memref.store %one, %small[%i] : memref<4xf32>
    scf.reduce
  }
  scf.for %i = %c0 to %c4 step %c1 {
    memref.store %one, %small[%i] : memref<4xf32>
  }
  %id = arith.constant 0 : i32
  scf.for %i = %c0 to %c4 step %c1 {
    func.call @kiln_rt_kernel_call(%ctx, %id) : (!llvm.ptr, i32) -> ()
  }
  return
}
