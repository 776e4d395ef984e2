// RUN: kiln-opt %s --kiln-outline-parallel-loops=min-elements=64 | FileCheck %s

// A big parallel loop runs on the pool; a small one and a serial loop become
// kernels called through the runtime; a loop that needs the runtime context
// stays. Loops that differ only in the arena offsets of their views share a
// kernel, which reads the offsets from the table the call passes.
//
// Every call gets a site id, and the manifest gets the site table: the kiln
// op and model line of each site (from the NameLoc the lowering gives the
// loops), and of each library call, by call id, with the layer where the
// lowering marked one (LayerNames.h; the add and the fused op have none). The
// table is not part of the kernels: the relu and the add share
// kiln_kernel_0. The add comes from a binary model (ONNX: no lines, each op
// named after its node), so its site names the node instead of a line.
// CHECK: module attributes {kiln.manifest = "{\22abi\22:4,
// CHECK-SAME: \22call_sites\22:[{\22layer\22:\22layer1.0.conv1\22,\22loc\22:\22model.mlir:9\22,\22op\22:\22kiln.conv2d\22}],
// CHECK-SAME: \22sites\22:[
// CHECK-SAME: {\22function\22:\22train\22,\22kernel\22:\22kiln_kernel_0\22,\22layer\22:\22layer1.0.bn1\22,\22loc\22:\22model.mlir:12\22,\22op\22:\22kiln.relu\22,\22parallel\22:true},
// CHECK-SAME: {\22function\22:\22train\22,\22kernel\22:\22kiln_kernel_0\22,\22loc\22:\22model.onnx#/layer1/Add\22,\22op\22:\22kiln.add\22,\22parallel\22:true},
// CHECK-SAME: {\22function\22:\22train\22,\22kernel\22:\22kiln_kernel_1\22,\22layer\22:\22layer1.0.bn1\22,\22loc\22:\22model.mlir:12\22,\22op\22:\22kiln.relu\22,\22parallel\22:false},
// CHECK-SAME: {\22function\22:\22train\22,\22kernel\22:\22kiln_kernel_2\22,\22loc\22:\22model.mlir:30\22,\22op\22:\22kiln.fused_elementwise(add+relu)\22,\22parallel\22:false},
// CHECK-SAME: {\22function\22:\22train\22,\22kernel\22:\22kiln_kernel_3\22,\22loc\22:\22model.mlir:40\22,\22op\22:\22?\22,\22parallel\22:false}]}"}
// CHECK-DAG: memref.global "private" constant @[[$T0:kiln_offsets_[0-9]+]] : memref<1xi64> = dense<0>
// CHECK-DAG: memref.global "private" constant @[[$T1:kiln_offsets_[0-9]+]] : memref<1xi64> = dense<1024>
// CHECK-DAG: memref.global "private" constant @[[$T2:kiln_offsets_[0-9]+]] : memref<2xi64> = dense<[0, 2048]>
// CHECK-DAG: func.func private @kiln_rt_parallel_for(!llvm.ptr, (memref<?xi8>, index, index, memref<?xi64>) -> (), memref<?xi8>, index, index, memref<?xi64>, i32)
// CHECK-DAG: func.func private @kiln_rt_serial_call(!llvm.ptr, (memref<?xi8>, index, index, memref<?xi64>) -> (), memref<?xi8>, memref<?xi64>, i32)
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
// CHECK: %[[S0:.*]] = arith.constant 0 : i32
// CHECK: call @kiln_rt_parallel_for(%[[CTX]], %[[K0]], %[[ARENA]], %{{.*}}, %{{.*}}, %[[C0]], %[[S0]])
// The same loop over another buffer: the same kernel, another table and
// another site.
// CHECK: %[[G1:.*]] = memref.get_global @[[$T1]]
// CHECK: %[[C1:.*]] = memref.cast %[[G1]]
// CHECK: %[[K0B:.*]] = constant @kiln_kernel_0
// CHECK: %[[S1:.*]] = arith.constant 1 : i32
// CHECK: call @kiln_rt_parallel_for(%[[CTX]], %[[K0B]], %[[ARENA]], %{{.*}}, %{{.*}}, %[[C1]], %[[S1]])
// CHECK: %[[K1:.*]] = constant @kiln_kernel_1
// CHECK: %[[S2:.*]] = arith.constant 2 : i32
// CHECK: call @kiln_rt_serial_call(%[[CTX]], %[[K1]], %[[ARENA]], %{{.*}}, %[[S2]])
// CHECK: %[[K2:.*]] = constant @kiln_kernel_2
// CHECK: %[[S3:.*]] = arith.constant 3 : i32
// CHECK: call @kiln_rt_serial_call(%[[CTX]], %[[K2]], %[[ARENA]], %{{.*}}, %[[S3]])
// CHECK: %[[G2:.*]] = memref.get_global @[[$T2]]
// CHECK: %[[C2:.*]] = memref.cast %[[G2]]
// CHECK: %[[K3:.*]] = constant @kiln_kernel_3
// CHECK: %[[S4:.*]] = arith.constant 4 : i32
// CHECK: call @kiln_rt_serial_call(%[[CTX]], %[[K3]], %[[ARENA]], %[[C2]], %[[S4]])
// Negative case: the loop calls the runtime with the context, so it stays
// and has no site.
// CHECK: scf.for
// CHECK: call @kiln_rt_kernel_call(%[[CTX]],
// CHECK-NOT: kiln_kernel_4
// CHECK-NOT: kiln_rt_serial_call
module attributes {kiln.manifest = "{\22abi\22:4}"} {
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
    } loc(#relu)
    %other = memref.view %arena[%c1024][] : memref<?xi8> to memref<256xf32>
    scf.parallel (%i) = (%c0) to (%c256) step (%c1) {
      memref.store %one, %other[%i] : memref<256xf32>
      scf.reduce
    } loc(#add)
    %small = memref.view %arena[%c0][] : memref<?xi8> to memref<4xf32>
    scf.parallel (%i) = (%c0) to (%c4) step (%c1) {
      memref.store %one, %small[%i] : memref<4xf32>
      scf.reduce
    } loc(#relu)
    scf.for %i = %c0 to %c4 step %c1 {
      memref.store %one, %small[%i] : memref<4xf32>
    } loc(#fused)
    // Copies one buffer into another: two offsets in its table. Without a
    // kiln op in its location, the site's op is "?".
    %to = memref.view %arena[%c2048][] : memref<?xi8> to memref<4xf32>
    scf.for %i = %c0 to %c4 step %c1 {
      %x = memref.load %small[%i] : memref<4xf32>
      memref.store %x, %to[%i] : memref<4xf32>
    } loc("model.mlir":40:5)
    %id = arith.constant 0 : i32
    scf.for %i = %c0 to %c4 step %c1 {
      func.call @kiln_rt_kernel_call(%ctx, %id) : (!llvm.ptr, i32) -> () loc(#conv)
    }
    return
  }
}
#relu = loc("kiln.relu"(fused<{kiln.layer = "layer1.0.bn1"}>["model.mlir":12:5]))
#add = loc("kiln.add"("/layer1/Add"("model.onnx":0:0)))
#fused = loc("kiln.fused_elementwise(add+relu)"("model.mlir":30:5))
#conv = loc("kiln.conv2d"(fused<{kiln.layer = "layer1.0.conv1"}>["some/dir/model.mlir":9:5]))
