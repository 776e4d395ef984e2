// RUN: kiln-opt %s --kiln-outline-parallel-loops=min-elements=64 | FileCheck %s

// A big parallel loop runs on the pool; a small one and a serial loop become
// kernels called directly; a loop that needs the runtime context stays.
// Loops that differ only in the arena offsets of their views share a kernel,
// which reads the offsets from the table the call passes.
// CHECK-DAG: memref.global "private" constant @[[$T0:kiln_offsets_[0-9]+]] : memref<1xi64> = dense<0>
// CHECK-DAG: memref.global "private" constant @[[$T1:kiln_offsets_[0-9]+]] : memref<1xi64> = dense<1024>
// CHECK-DAG: memref.global "private" constant @[[$T2:kiln_offsets_[0-9]+]] : memref<2xi64> = dense<[0, 2048]>
// CHECK-DAG: func.func private @kiln_rt_parallel_for(!llvm.ptr, (memref<?xi8>, index, index, memref<?xi64>) -> (), memref<?xi8>, index, index, memref<?xi64>)
// CHECK: func.func private @kiln_kernel_0(%[[A:.*]]: memref<?xi8>, %[[B:.*]]: index, %[[E:.*]]: index, %[[T:.*]]: memref<?xi64>)
// CHECK: %[[OFF:.*]] = memref.load %[[T]][%{{.*}}] : memref<?xi64>
// CHECK: %[[SHIFT:.*]] = arith.index_cast %[[OFF]]
// CHECK: %[[V:.*]] = memref.view %[[A]][%[[SHIFT]]]
// CHECK: scf.parallel (%{{.*}}) = (%[[B]]) to (%[[E]])
// CHECK: memref.store %{{.*}}, %[[V]]
// CHECK: func.func private @kiln_kernel_1(
// CHECK: scf.parallel
// CHECK: func.func private @kiln_kernel_2(
// CHECK: scf.for
// CHECK: func.func private @kiln_kernel_3(
// CHECK: memref.load
// CHECK: scf.for
// CHECK-LABEL: func.func @kiln_model_train_step
// CHECK-SAME: (%[[CTX:.*]]: !llvm.ptr, %[[ARENA:.*]]: memref<?xi8>)
// CHECK: %[[G0:.*]] = memref.get_global @[[$T0]]
// CHECK: %[[C0:.*]] = memref.cast %[[G0]] : memref<1xi64> to memref<?xi64>
// CHECK: %[[K0:.*]] = constant @kiln_kernel_0
// CHECK: call @kiln_rt_parallel_for(%[[CTX]], %[[K0]], %[[ARENA]], %{{.*}}, %{{.*}}, %[[C0]])
// The same loop over another buffer: the same kernel, another table.
// CHECK: %[[G1:.*]] = memref.get_global @[[$T1]]
// CHECK: %[[C1:.*]] = memref.cast %[[G1]]
// CHECK: %[[K0B:.*]] = constant @kiln_kernel_0
// CHECK: call @kiln_rt_parallel_for(%[[CTX]], %[[K0B]], %[[ARENA]], %{{.*}}, %{{.*}}, %[[C1]])
// CHECK: call @kiln_kernel_1(%[[ARENA]],
// CHECK: call @kiln_kernel_2(%[[ARENA]],
// CHECK: call @kiln_kernel_3(%[[ARENA]], %{{.*}}, %{{.*}}, %{{.*}})
// Negative case: the loop calls the runtime with the context, so it stays.
// CHECK: scf.for
// CHECK: call @kiln_rt_kernel_call(%[[CTX]],
// CHECK-NOT: kiln_kernel_4
func.func private @kiln_rt_kernel_call(!llvm.ptr, i32)
func.func @kiln_model_train_step(%ctx: !llvm.ptr, %arena: memref<?xi8>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c256 = arith.constant 256 : index
  %c1024 = arith.constant 1024 : index
  %c2048 = arith.constant 2048 : index
  %one = arith.constant 1.0 : f32
  %big = memref.view %arena[%c0][] : memref<?xi8> to memref<256xf32>
  scf.parallel (%i) = (%c0) to (%c256) step (%c1) {
    memref.store %one, %big[%i] : memref<256xf32>
    scf.reduce
  }
  %other = memref.view %arena[%c1024][] : memref<?xi8> to memref<256xf32>
  scf.parallel (%i) = (%c0) to (%c256) step (%c1) {
    memref.store %one, %other[%i] : memref<256xf32>
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
  // Copies one buffer into another: two offsets in its table.
  %to = memref.view %arena[%c2048][] : memref<?xi8> to memref<4xf32>
  scf.for %i = %c0 to %c4 step %c1 {
    %x = memref.load %small[%i] : memref<4xf32>
    memref.store %x, %to[%i] : memref<4xf32>
  }
  %id = arith.constant 0 : i32
  scf.for %i = %c0 to %c4 step %c1 {
    func.call @kiln_rt_kernel_call(%ctx, %id) : (!llvm.ptr, i32) -> ()
  }
  return
}
