// RUN: kiln-opt %s -split-input-file --kiln-lower-to-linalg -verify-diagnostics | FileCheck %s

// A dense layer trained with SGD: library call for the matmuls, loops for
// the rest, gradients averaged in place, the weight updated in place.
// Variables come first in the arena: @w at 0 (64 B), @w.momentum at 64,
// @kiln.lr_schedule at 128; scratch starts at 192.
module @tiny {
  kiln.variable parameter @w : tensor<4x4xf32> init he_normal
  kiln.variable state @w.momentum : tensor<4x4xf32> init zeros
  kiln.variable state @kiln.lr_schedule : tensor<1xf64> init constant value dense<1.0e-01> : tensor<1xf64>
  // CHECK-DAG: func.func private @kiln_rt_kernel_call(!llvm.ptr, i32)
  // CHECK-DAG: func.func private @kiln_rt_allreduce_start(!llvm.ptr, i32)
  // CHECK-DAG: func.func private @kiln_rt_allreduce_wait(!llvm.ptr, i32)
  // CHECK-LABEL: func.func @kiln_model_train_step
  // CHECK-SAME: (%[[CTX:.*]]: !llvm.ptr, %[[ARENA:.*]]: memref<?xi8>) attributes {llvm.emit_c_interface}
  func.func @train_step(%x: tensor<2x4xf32>, %labels: tensor<2xi32>, %step: tensor<i64> {kiln.step}) -> (tensor<f32>, tensor<2x4xf32>, tensor<f32> {kiln.learning_rate}) {
    %w = kiln.read @w : tensor<4x4xf32>
    // The forward matmul is library call 0.
    // CHECK: %[[ID0:.*]] = arith.constant 0 : i32
    // CHECK: call @kiln_rt_kernel_call(%[[CTX]], %[[ID0]])
    %y = kiln.dense %x, %w : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
    // CHECK: scf.for
    // CHECK: math.log
    %loss = kiln.softmax_cross_entropy %y, %labels : (tensor<2x4xf32>, tensor<2xi32>) -> tensor<f32>
    // CHECK: linalg.fill
    %one = arith.constant dense<1.0> : tensor<f32>
    %dy = kiln.softmax_cross_entropy_backward %one, %y, %labels : (tensor<f32>, tensor<2x4xf32>, tensor<2xi32>) -> tensor<2x4xf32>
    // CHECK: call @kiln_rt_kernel_call
    %dw = kiln.matmul %x, %dy transpose_lhs : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<4x4xf32>
    // CHECK: call @kiln_rt_allreduce_start(%[[CTX]], %{{.*}})
    %r = kiln.allreduce %dw bucket 0 : tensor<4x4xf32>
    %p = kiln.read @kiln.lr_schedule : tensor<1xf64>
    // CHECK: memref.view %[[ARENA]][%{{.*}}][] : memref<?xi8> to memref<1xf64>
    %lr = kiln.learning_rate %step, %p schedule constant : (tensor<i64>, tensor<1xf64>) -> tensor<f32>
    %v = kiln.read @w.momentum : tensor<4x4xf32>
    // The optimizer waits for the bucket only when it needs it.
    // CHECK: call @kiln_rt_allreduce_wait(%[[CTX]], %{{.*}})
    // The new weight is written over the old one, at offset 0.
    // CHECK: %[[C0A:.*]] = arith.constant 0 : index
    // CHECK-NEXT: %[[WIN:.*]] = memref.view %[[ARENA]][%[[C0A]]][] : memref<?xi8> to memref<4x4xf32>
    // CHECK: %[[C0B:.*]] = arith.constant 0 : index
    // CHECK-NEXT: %[[WOUT:.*]] = memref.view %[[ARENA]][%[[C0B]]][] : memref<?xi8> to memref<4x4xf32>
    // CHECK: linalg.generic {{.*}} ins(%[[WIN]], %{{.*}}, %{{.*}} : {{.*}}) outs(%[[WOUT]], %{{.*}} : {{.*}})
    %nw, %nv = kiln.sgd_update %w, %r, %v, %lr momentum 0.9 weight_decay 0.0 : tensor<4x4xf32>
    kiln.assign @w, %nw : tensor<4x4xf32>
    kiln.assign @w.momentum, %nv : tensor<4x4xf32>
    // Updates were in place: nothing is copied back.
    // CHECK-NOT: memref.copy
    // CHECK: return
    return %loss, %y, %lr : tensor<f32>, tensor<2x4xf32>, tensor<f32>
  }
}

// -----

// Negative case: shapes must be static.
func.func @train_step(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
  // expected-error @+1 {{has a dynamic result shape 'tensor<?x4xf32>'; run --kiln-specialize-batch first}}
  %y = kiln.relu %x : tensor<?x4xf32>
  return %y : tensor<?x4xf32>
}

// -----

// A fused chain is one linalg.generic over all its operands and results; a
// fused SGD update is one scf.parallel over the chunks of all its
// parameters (here one chunk each), each chunk looking its parameter up in
// constant tables.
// CHECK-DAG: memref.global "private" constant @[[$PARAMS:kiln_sgd_params[_0-9]*]] : memref<10xi64> = dense<[12, 0, 0, 0, 64, 4, 1, 128, 128, 192]>
// CHECK-DAG: memref.global "private" constant @[[$CHUNKS:kiln_sgd_chunks[_0-9]*]] : memref<2xi64> = dense<[0, 1]>
// CHECK-LABEL: func.func @kiln_model_train_step
module @fused {
  kiln.variable parameter @a : tensor<3x4xf32> init zeros
  kiln.variable state @a.momentum : tensor<3x4xf32> init zeros
  kiln.variable parameter @b : tensor<4xf32> init zeros
  kiln.variable state @b.momentum : tensor<4xf32> init zeros
  func.func @train_step(%x: tensor<2x4xf32>, %labels: tensor<2xi32>) -> (tensor<f32>, tensor<2x4xf32>) {
    // CHECK: linalg.generic
    // CHECK-SAME: ins(%{{.*}}, %{{.*}} : memref<8xf32>, memref<8xf32>) outs(%{{.*}} : memref<8xf32>)
    // CHECK: %[[S:.*]] = arith.addf
    // CHECK: %[[R:.*]] = arith.maximumf %[[S]]
    // CHECK: linalg.yield %[[R]]
    %f = kiln.fused_elementwise %x, %x : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32> {
    ^bb0(%p: tensor<2x4xf32>, %q: tensor<2x4xf32>):
      %s = kiln.add %p, %q : tensor<2x4xf32>
      %r = kiln.relu %s : tensor<2x4xf32>
      kiln.yield %r : tensor<2x4xf32>
    }
    %loss = kiln.softmax_cross_entropy %f, %labels : (tensor<2x4xf32>, tensor<2xi32>) -> tensor<f32>
    %lr = arith.constant dense<0.1> : tensor<f32>
    %wa = kiln.read @a : tensor<3x4xf32>
    %va = kiln.read @a.momentum : tensor<3x4xf32>
    %wb = kiln.read @b : tensor<4xf32>
    %vb = kiln.read @b.momentum : tensor<4xf32>
    // One loop over the chunks of both parameters, looking each chunk's
    // parameter up in constant tables (size, first chunk, arena offsets of
    // weight, gradient, velocity: updated in place).
    // CHECK: %[[CT:.*]] = memref.get_global @[[$CHUNKS]]
    // CHECK: %[[PT:.*]] = memref.get_global @[[$PARAMS]]
    // CHECK: scf.parallel (%[[CHUNK:.*]]) = (%{{.*}}) to (%{{.*}}) step
    // CHECK: memref.load %[[CT]][%[[CHUNK]]]
    // CHECK: %[[W:.*]] = memref.view %{{.*}}[%{{.*}}][%{{.*}}] : memref<?xi8> to memref<?xf32>
    // CHECK: scf.for
    // CHECK: math.fma
    // CHECK: memref.store %{{.*}}, %[[W]]
    // CHECK-NOT: scf.parallel
    // CHECK-NOT: scf.index_switch
    // CHECK-NOT: memref.copy
    // CHECK: return
    %nw:2, %nv:2 = kiln.fused_sgd_update (%wa, %wb), (%wa, %wb), (%va, %vb), %lr momentum 0.9 weight_decay 0.0 : tensor<3x4xf32>, tensor<4xf32>
    kiln.assign @a, %nw#0 : tensor<3x4xf32>
    kiln.assign @a.momentum, %nv#0 : tensor<3x4xf32>
    kiln.assign @b, %nw#1 : tensor<4xf32>
    kiln.assign @b.momentum, %nv#1 : tensor<4xf32>
    return %loss, %f : tensor<f32>, tensor<2x4xf32>
  }
}

// -----

// A fused update with bf16 copies rounds each new weight in its loop and
// stores it straight into the copy variable (the last column of the table:
// size, first chunk, weight, gradient, velocity, copy), since every read of
// the copy comes before the update: no copy at the end of the step. The
// manifest declares the copy with its source.
// CHECK: kiln.manifest = "{{.*}}{\22dtype\22:\22bf16\22,\22init\22:\22copy\22,\22kind\22:\22state\22,\22name\22:\22a.bf16\22,\22of\22:\22a\22,\22offset\22:64,
// CHECK-DAG: memref.global "private" constant @[[$PARAMS:kiln_sgd_params[_0-9]*]] : memref<6xi64> = dense<[16, 0, 0, {{[0-9]+}}, 128, 64]>
// CHECK-LABEL: func.func @kiln_model_train_step
// CHECK: scf.parallel
// CHECK: %[[C:.*]] = memref.view %{{.*}}[%{{.*}}][%{{.*}}] : memref<?xi8> to memref<?xbf16>
// CHECK: scf.for
// CHECK: %[[NW:.*]] = arith.subf
// CHECK: %[[R:.*]] = arith.truncf %[[NW]] : f32 to bf16
// CHECK: memref.store %[[R]], %[[C]]
// CHECK-NOT: memref.copy
// CHECK: return
module @copies {
  kiln.variable parameter @a : tensor<4x4xf32> init zeros
  kiln.variable state @a.bf16 : tensor<4x4xbf16> init copy of @a
  kiln.variable state @a.momentum : tensor<4x4xf32> init zeros
  func.func @train_step(%x: tensor<2x4xf32>) -> tensor<4x4xf32> {
    %lr = arith.constant dense<0.1> : tensor<f32>
    %ab = kiln.read @a.bf16 : tensor<4x4xbf16>
    %g = kiln.cast %ab : tensor<4x4xbf16> to tensor<4x4xf32>
    %w = kiln.read @a : tensor<4x4xf32>
    %v = kiln.read @a.momentum : tensor<4x4xf32>
    %nw, %nv, %nc = kiln.fused_sgd_update (%w), (%g), (%v), %lr momentum 0.9 weight_decay 0.0 : tensor<4x4xf32> copies bf16
    kiln.assign @a, %nw : tensor<4x4xf32>
    kiln.assign @a.bf16, %nc : tensor<4x4xbf16>
    kiln.assign @a.momentum, %nv : tensor<4x4xf32>
    return %g : tensor<4x4xf32>
  }
}

// -----

// Negative case: the old copy is still read after the update (by the
// returned cast), so the new one lands in scratch and is copied into the
// variable at the end of the step.
// CHECK-DAG: memref.global "private" constant @[[$PARAMS:kiln_sgd_params[_0-9]*]] : memref<6xi64> = dense<[16, 0, 0, {{[0-9]+}}, 128, [[SCRATCH:[0-9]+]]]>
// CHECK-LABEL: func.func @kiln_model_train_step
// CHECK: scf.parallel
// CHECK: arith.truncf
// CHECK: memref.copy %{{.*}}, %{{.*}} : memref<4x4xbf16> to memref<4x4xbf16>
module @copy_read_late {
  kiln.variable parameter @a : tensor<4x4xf32> init zeros
  kiln.variable state @a.bf16 : tensor<4x4xbf16> init copy of @a
  kiln.variable state @a.momentum : tensor<4x4xf32> init zeros
  func.func @train_step(%x: tensor<2x4xf32>, %g: tensor<4x4xf32>) -> tensor<4x4xf32> {
    %lr = arith.constant dense<0.1> : tensor<f32>
    %ab = kiln.read @a.bf16 : tensor<4x4xbf16>
    %w = kiln.read @a : tensor<4x4xf32>
    %v = kiln.read @a.momentum : tensor<4x4xf32>
    %nw, %nv, %nc = kiln.fused_sgd_update (%w), (%g), (%v), %lr momentum 0.9 weight_decay 0.0 : tensor<4x4xf32> copies bf16
    kiln.assign @a, %nw : tensor<4x4xf32>
    kiln.assign @a.bf16, %nc : tensor<4x4xbf16>
    kiln.assign @a.momentum, %nv : tensor<4x4xf32>
    %late = kiln.cast %ab : tensor<4x4xbf16> to tensor<4x4xf32>
    return %late : tensor<4x4xf32>
  }
}

// -----

// A LARS update with a copy rounds the new weight in its update loop, whose
// third output is the copy variable itself (offset 64).
// CHECK-LABEL: func.func @kiln_model_train_step
// CHECK: %[[OFF:.*]] = arith.constant 64 : index
// CHECK-NEXT: %[[C:.*]] = memref.view %{{.*}}[%[[OFF]]][] : memref<?xi8> to memref<4x4xbf16>
// CHECK: linalg.generic
// CHECK-SAME: outs(%{{.*}}, %{{.*}}, %[[C]] : memref<4x4xf32>, memref<4x4xf32>, memref<4x4xbf16>)
// CHECK: %[[NW:.*]] = arith.subf
// CHECK-NEXT: %[[R:.*]] = arith.truncf %[[NW]] : f32 to bf16
// CHECK-NEXT: linalg.yield %[[NW]], %{{.*}}, %[[R]]
// CHECK-NOT: memref.copy
// CHECK: return
module @lars_copy {
  kiln.variable parameter @a : tensor<4x4xf32> init zeros
  kiln.variable state @a.bf16 : tensor<4x4xbf16> init copy of @a
  kiln.variable state @a.momentum : tensor<4x4xf32> init zeros
  func.func @train_step(%x: tensor<2x4xf32>, %g: tensor<4x4xf32>) -> tensor<4x4xf32> {
    %lr = arith.constant dense<0.1> : tensor<f32>
    %w = kiln.read @a : tensor<4x4xf32>
    %v = kiln.read @a.momentum : tensor<4x4xf32>
    %nw, %nv, %nc = kiln.lars_update %w, %g, %v, %lr momentum 0.9 eta 1.0e-3 weight_decay 0.0 epsilon 0.0 skip_adaptation : tensor<4x4xf32> copy tensor<4x4xbf16>
    kiln.assign @a, %nw : tensor<4x4xf32>
    kiln.assign @a.bf16, %nc : tensor<4x4xbf16>
    kiln.assign @a.momentum, %nv : tensor<4x4xf32>
    return %g : tensor<4x4xf32>
  }
}

// -----

// Negative case: one fused update over parameters of different element types
// has no single loop body.
module @mixed {
  kiln.variable parameter @a : tensor<4xf32> init zeros
  kiln.variable state @a.momentum : tensor<4xf32> init zeros
  kiln.variable parameter @b : tensor<4xbf16> init zeros
  kiln.variable state @b.momentum : tensor<4xbf16> init zeros
  func.func @train_step(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
    %lr = arith.constant dense<0.1> : tensor<f32>
    %wa = kiln.read @a : tensor<4xf32>
    %va = kiln.read @a.momentum : tensor<4xf32>
    %wb = kiln.read @b : tensor<4xbf16>
    %vb = kiln.read @b.momentum : tensor<4xbf16>
    // expected-error @+1 {{x86 lowering: parameters of one fused update must share an element type}}
    %nw:2, %nv:2 = kiln.fused_sgd_update (%wa, %wb), (%wa, %wb), (%va, %vb), %lr momentum 0.9 weight_decay 0.0 : tensor<4xf32>, tensor<4xbf16>
    kiln.assign @a, %nw#0 : tensor<4xf32>
    kiln.assign @a.momentum, %nv#0 : tensor<4xf32>
    kiln.assign @b, %nw#1 : tensor<4xbf16>
    kiln.assign @b.momentum, %nv#1 : tensor<4xbf16>
    return %x : tensor<2x4xf32>
  }
}

// -----

// nChw16c: a reorder is a library call whose operands carry their layouts,
// and a blocked batch norm views its input as [N, C/16, H*W] and its
// per-channel vectors as [C/16], both of vector<16xf32>. Its statistics take
// one pass over the input: per image (parallel) and channel block, a loop
// over the pixels carries the sums of the deviations from image 0's means
// and of their squares in registers, then the images' sums are added.
// CHECK-LABEL: module @blocked
// CHECK-SAME: \22kind\22:\22reorder\22,\22operands\22:{\22input\22:{\22dtype\22:\22f32\22,\22layout\22:\22nhwc\22
// CHECK-SAME: \22output\22:{\22dtype\22:\22f32\22,\22layout\22:\22nChw16c\22
// CHECK: call @kiln_rt_kernel_call
// CHECK: %[[X:.*]] = memref.view {{.*}} to memref<2x2x16xvector<16xf32>>
// CHECK: %[[MEAN:.*]] = memref.view {{.*}} to memref<2xvector<16xf32>>
// CHECK: %[[VAR:.*]] = memref.view {{.*}} to memref<2xvector<16xf32>>
// CHECK: %[[SHIFT:.*]] = memref.view {{.*}} to memref<2xvector<16xf32>>
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]} ins(%[[X]] : memref<2x2x16xvector<16xf32>>) outs(%[[SHIFT]] : memref<2xvector<16xf32>>)
// CHECK: %[[PART:.*]] = memref.view {{.*}} to memref<2x2xvector<16xf32>>
// CHECK: %[[PART2:.*]] = memref.view {{.*}} to memref<2x2xvector<16xf32>>
// CHECK: scf.parallel (%[[N:.*]]) =
// CHECK: scf.for %[[CB:.*]] =
// CHECK: %[[SUMS:.*]]:2 = scf.for %[[P:.*]] = {{.*}} iter_args({{.*}}) -> (vector<16xf32>, vector<16xf32>)
// CHECK: memref.load %[[X]][%[[N]], %[[CB]], %[[P]]]
// CHECK: math.fma
// CHECK: scf.yield
// CHECK: memref.store %[[SUMS]]#0, %[[PART]][%[[N]], %[[CB]]]
// CHECK: memref.store %[[SUMS]]#1, %[[PART2]][%[[N]], %[[CB]]]
// CHECK: linalg.generic {{.*}} iterator_types = ["reduction", "parallel"]} ins(%[[PART]], %[[PART2]] : {{.*}})
// CHECK: linalg.generic {{.*}} ins(%[[SHIFT]], %{{.*}}, %{{.*}} : {{.*}}) outs(%[[MEAN]], %[[VAR]] : memref<2xvector<16xf32>>, memref<2xvector<16xf32>>)
// CHECK: arith.maximumf {{.*}} : vector<16xf32>
// The normalization, rectified in the same loop.
// CHECK: math.fma {{.*}} : vector<16xf32>
// CHECK-NEXT: arith.constant
// CHECK-NEXT: arith.maximumf {{.*}} : vector<16xf32>
// CHECK: call @kiln_rt_kernel_call
module @blocked {
  func.func @train_step(%x: tensor<2x4x4x32xf32>, %g: tensor<32xf32>) -> tensor<2x4x4x32xf32> {
    %b = kiln.reorder %x to nChw16c : tensor<2x4x4x32xf32>
    %y, %m, %v, %nm, %nv = kiln.batch_norm_train %b, %g, %g, %g, %g epsilon 1.0e-5 momentum 0.9 relu {kiln.layout = #kiln.layout<nChw16c>} : (tensor<2x4x4x32xf32>, tensor<32xf32>, tensor<32xf32>, tensor<32xf32>, tensor<32xf32>) -> (tensor<2x4x4x32xf32>, tensor<32xf32>, tensor<32xf32>, tensor<32xf32>, tensor<32xf32>)
    %r = kiln.reorder %y to nhwc : tensor<2x4x4x32xf32>
    return %r : tensor<2x4x4x32xf32>
  }
}

// -----

// With 16 channels a nChw16c block is a whole NHWC pixel: the reorders copy
// nothing (no library call), and each result is stored where its input is,
// so the batch norm reads %x's bytes and writes the returned result's.
// CHECK-LABEL: module @reorder_in_place
// CHECK-SAME: \22calls\22:[]
// CHECK-SAME: \22outputs\22:{\22loss\22:{{.*}}\22offset\22:2048,
// CHECK: memref.view %arg1[%c0][] : memref<?xi8> to memref<2x1x16xvector<16xf32>>
// CHECK: memref.view %arg1[%c2048][] : memref<?xi8> to memref<2x1x16xvector<16xf32>>
module @reorder_in_place {
  func.func @train_step(%x: tensor<2x4x4x16xf32>, %g: tensor<16xf32>) -> tensor<2x4x4x16xf32> {
    %b = kiln.reorder %x to nChw16c : tensor<2x4x4x16xf32>
    %y, %m, %v, %nm, %nv = kiln.batch_norm_train %b, %g, %g, %g, %g epsilon 1.0e-5 momentum 0.9 relu {kiln.layout = #kiln.layout<nChw16c>} : (tensor<2x4x4x16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) -> (tensor<2x4x4x16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>)
    %r = kiln.reorder %y to nhwc : tensor<2x4x4x16xf32>
    return %r : tensor<2x4x4x16xf32>
  }
}

// -----

// Negative case: the lowering checks layouts op by op (a nChw16c value read
// as NHWC would be silently wrong).
module @misread {
  func.func @train_step(%x: tensor<2x4x4x32xf32>) -> tensor<2x4x4x32xf32> {
    %b = kiln.reorder %x to nChw16c : tensor<2x4x4x32xf32>
    // expected-error @+1 {{'kiln.relu' op reads operand #0 as nhwc but it is stored nChw16c (a kiln.reorder is missing)}}
    %r = kiln.relu %b : tensor<2x4x4x32xf32>
    return %r : tensor<2x4x4x32xf32>
  }
}

// -----

// A convolution fused with its inference batch norm (eval step): the filter
// is scaled per output channel and the shift becomes a bias, both in the
// temporary region; the residual sits in the output's storage when nothing
// reads it afterwards (%s), and keeps its own when something does (%a is
// returned), which the runtime then copies.
// CHECK-LABEL: module @fused_conv
// CHECK-SAME: \22kind\22:\22conv2d_forward\22,\22operands\22:{\22bias\22:{\22dtype\22:\22f32\22,\22offset\22:[[BIAS:[0-9]+]],\22shape\22:[16]},\22filter\22:{\22dtype\22:\22f32\22,\22offset\22:[[FILTER:[0-9]+]],\22shape\22:[1,1,16,16]}
// CHECK-SAME: \22output\22:{\22dtype\22:\22f32\22,\22layout\22:\22nhwc\22,\22offset\22:[[A:[0-9]+]],{{.*}}\22residual\22:{\22dtype\22:\22f32\22,\22layout\22:\22nhwc\22,\22offset\22:[[A]],{{.*}}\22relu\22:true
// CHECK-SAME: \22output\22:{\22dtype\22:\22f32\22,\22layout\22:\22nhwc\22,\22offset\22:[[B:[0-9]+]],{{.*}}\22residual\22:{\22dtype\22:\22f32\22,\22layout\22:\22nhwc\22,\22offset\22:[[A]],
// CHECK: math.rsqrt
// CHECK: linalg.generic {{.*}} ins(%{{.*}}, %{{.*}} : memref<1x1x16x16xf32>, memref<16xf32>) outs(%{{.*}} : memref<1x1x16x16xf32>)
// CHECK: arith.mulf
// CHECK: call @kiln_rt_kernel_call
module @fused_conv {
  kiln.variable parameter @w : tensor<1x1x16x16xf32> init he_normal
  kiln.variable parameter @g : tensor<16xf32> init ones
  func.func @eval_step(%x: tensor<2x4x4x16xf32>) -> (tensor<2x4x4x16xf32>, tensor<2x4x4x16xf32>) {
    %w = kiln.read @w : tensor<1x1x16x16xf32>
    %g = kiln.read @g : tensor<16xf32>
    %s = kiln.relu %x : tensor<2x4x4x16xf32>
    %a = kiln.fused_conv2d_batch_norm %x, %w, %g, %g, %g, %g residual %s stride [1, 1] pad [0, 0, 0, 0] epsilon 1.0e-5 relu : (tensor<2x4x4x16xf32>, tensor<1x1x16x16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<2x4x4x16xf32>) -> tensor<2x4x4x16xf32>
    %b = kiln.fused_conv2d_batch_norm %a, %w, %g, %g, %g, %g residual %a stride [1, 1] pad [0, 0, 0, 0] epsilon 1.0e-5 : (tensor<2x4x4x16xf32>, tensor<1x1x16x16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<2x4x4x16xf32>) -> tensor<2x4x4x16xf32>
    return %a, %b : tensor<2x4x4x16xf32>, tensor<2x4x4x16xf32>
  }
}

// -----

// A convolution fused with its training batch norm: the convolution call
// writes the batch statistics into a temporary ([2][C]), which is copied
// into the mean and variance results; the batch norm then only normalizes
// and updates its running statistics, without a pass of its own over the
// convolution's output (no reduction loop).
// CHECK-LABEL: module @fused_conv_train
// CHECK-SAME: \22kind\22:\22conv2d_forward\22,\22operands\22:{{.*}}\22statistics\22:{\22dtype\22:\22f32\22,\22offset\22:{{[0-9]+}},\22shape\22:[2,16]}
// CHECK: call @kiln_rt_kernel_call
// CHECK: linalg.generic {{.*}} ins(%[[S:.*]], %[[S]] : memref<2x16xf32>, memref<2x16xf32>) outs(%{{.*}}, %{{.*}} : memref<16xf32>, memref<16xf32>)
// CHECK-NOT: reduction
// CHECK: arith.maximumf
// CHECK-NOT: reduction
// CHECK: return
module @fused_conv_train {
  kiln.variable parameter @w : tensor<3x3x16x16xf32> init he_normal
  func.func @train_step(%x: tensor<2x4x4x16xf32>, %g: tensor<16xf32>) -> (tensor<2x4x4x16xf32>, tensor<2x4x4x16xf32>) {
    %w = kiln.read @w : tensor<3x3x16x16xf32>
    %c, %y, %m, %v, %nm, %nv = kiln.fused_conv2d_batch_norm_train %x, %w, %g, %g, %g, %g stride [1, 1] pad [1, 1, 1, 1] epsilon 1.0e-5 momentum 0.9 relu : (tensor<2x4x4x16xf32>, tensor<3x3x16x16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) -> (tensor<2x4x4x16xf32>, tensor<2x4x4x16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>)
    return %c, %y : tensor<2x4x4x16xf32>, tensor<2x4x4x16xf32>
  }
}

// -----

// A dense layer's fused weight and bias gradients are one library call.
// CHECK-LABEL: module @dense_gradients
// CHECK-SAME: \22kind\22:\22dense_backward_weights\22,\22operands\22:{\22bias_grad\22:{\22dtype\22:\22f32\22,\22offset\22:{{[0-9]+}},\22shape\22:[4]},\22input\22:{{.*}}\22shape\22:[2,8]},\22output_grad\22:{{.*}}\22shape\22:[2,4]},\22weight_grad\22:{{.*}}\22shape\22:[8,4]}
// CHECK: call @kiln_rt_kernel_call
module @dense_gradients {
  kiln.variable parameter @w : tensor<8x4xf32> init he_normal
  func.func @eval_step(%x: tensor<2x8xf32>) -> (tensor<8x4xf32>, tensor<4xf32>) {
    %w = kiln.read @w : tensor<8x4xf32>
    %dy = kiln.dense %x, %w : (tensor<2x8xf32>, tensor<8x4xf32>) -> tensor<2x4xf32>
    %dw, %db = kiln.fused_dense_backward_weights %x, %dy : (tensor<2x8xf32>, tensor<2x4xf32>) -> (tensor<8x4xf32>, tensor<4xf32>)
    return %dw, %db : tensor<8x4xf32>, tensor<4xf32>
  }
}

// -----

// A training batch norm with a fused residual and relu: the normalizing
// loop reads the residual and adds it in f32 before rectifying and rounding
// once to bf16.
// CHECK-LABEL: module @batch_norm_residual
// CHECK: linalg.generic {{.*}} ins(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : memref<32x2xvector<16xbf16>>, memref<2xvector<16xf32>>, memref<2xvector<16xf32>>, memref<32x2xvector<16xbf16>>) outs(%{{.*}} : memref<32x2xvector<16xbf16>>)
// CHECK: %[[NORMALIZED:.*]] = math.fma
// CHECK-NEXT: %[[RESIDUAL:.*]] = arith.extf
// CHECK-NEXT: %[[SUM:.*]] = arith.addf %[[NORMALIZED]], %[[RESIDUAL]]
// CHECK-NEXT: arith.constant
// CHECK-NEXT: %[[RECTIFIED:.*]] = arith.maximumf %[[SUM]]
// CHECK-NEXT: arith.truncf %[[RECTIFIED]] : vector<16xf32> to vector<16xbf16>
module @batch_norm_residual {
  func.func @train_step(%x: tensor<2x4x4x32xbf16>, %g: tensor<32xf32>) -> tensor<2x4x4x32xbf16> {
    %r = kiln.relu %x : tensor<2x4x4x32xbf16>
    %y, %m, %v, %nm, %nv = kiln.batch_norm_train %x, %g, %g, %g, %g residual %r epsilon 1.0e-5 momentum 0.9 relu : (tensor<2x4x4x32xbf16>, tensor<32xf32>, tensor<32xf32>, tensor<32xf32>, tensor<32xf32>, tensor<2x4x4x32xbf16>) -> (tensor<2x4x4x32xbf16>, tensor<32xf32>, tensor<32xf32>, tensor<32xf32>, tensor<32xf32>)
    return %y : tensor<2x4x4x32xbf16>
  }
}

// -----

// A batch-norm backward with the rectifier's mask (relu_offset): both passes
// read only dy and x (two activations), and recompute the mask as
// x * scale + shift > 0 with the forward's coefficients. With 2 vectors a
// row (32 channels), the sums pass carries its sums in registers.
// CHECK-LABEL: module @batch_norm_backward_relu
// The forward's statistics, then the backward's sums:
// CHECK: scf.for {{.*}} iter_args({{.*}}) -> (vector<16xf32>, vector<16xf32>)
// CHECK: scf.for {{.*}} iter_args({{.*}}) -> (vector<16xf32>, vector<16xf32>)
// CHECK-COUNT-2: memref.load {{.*}} : memref<4x8x2xvector<16xbf16>>
// CHECK: math.fma
// CHECK-NEXT: arith.cmpf ogt
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "parallel"]} ins(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : memref<32x2xvector<16xbf16>>, memref<32x2xvector<16xbf16>>, memref<2xvector<16xf32>>
// CHECK: %[[V:.*]] = math.fma
// CHECK-NEXT: %[[POSITIVE:.*]] = arith.cmpf ogt, %[[V]]
// CHECK-NEXT: arith.select %[[POSITIVE]]
module @batch_norm_backward_relu {
  func.func @train_step(%x: tensor<2x4x4x32xbf16>, %g: tensor<32xf32>) -> tensor<2x4x4x32xbf16> {
    %y, %m, %v, %nm, %nv = kiln.batch_norm_train %x, %g, %g, %g, %g epsilon 1.0e-5 momentum 0.9 relu : (tensor<2x4x4x32xbf16>, tensor<32xf32>, tensor<32xf32>, tensor<32xf32>, tensor<32xf32>) -> (tensor<2x4x4x32xbf16>, tensor<32xf32>, tensor<32xf32>, tensor<32xf32>, tensor<32xf32>)
    %dx, %dg, %db = kiln.batch_norm_backward %y, %x, %g, %m, %v relu_offset %g epsilon 1.0e-5 : (tensor<2x4x4x32xbf16>, tensor<2x4x4x32xbf16>, tensor<32xf32>, tensor<32xf32>, tensor<32xf32>, tensor<32xf32>) -> (tensor<2x4x4x32xbf16>, tensor<32xf32>, tensor<32xf32>)
    return %dx : tensor<2x4x4x32xbf16>
  }
}

// -----

// NHWC with 64 channels (4 vectors a row): the statistics take one pass over
// the input, summing the deviations from the sample's channel means (the
// first 64 rows or image, at most all 32 rows here) and their squares, per
// row block (parallel) and then over the blocks.
// CHECK-LABEL: module @one_pass_statistics
// CHECK: %[[X:.*]] = memref.view {{.*}} to memref<32x4xvector<16xbf16>>
// CHECK: %[[MEAN:.*]] = memref.view {{.*}} to memref<4xvector<16xf32>>
// CHECK: %[[VAR:.*]] = memref.view {{.*}} to memref<4xvector<16xf32>>
// CHECK: %[[SAMPLE:.*]] = memref.subview %[[X]][0, 0] [32, 4] [1, 1]
// CHECK: %[[SHIFT:.*]] = memref.view {{.*}} to memref<4xvector<16xf32>>
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]} ins(%[[SAMPLE]] : {{.*}}) outs(%[[SHIFT]] : memref<4xvector<16xf32>>)
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "reduction", "parallel"]} ins(%{{.*}}, %[[SHIFT]] : {{.*}}) outs(%[[PART:.*]], %{{.*}} : memref<{{.*}}x4xvector<16xf32>>, memref<{{.*}}x4xvector<16xf32>>)
// CHECK: math.fma {{.*}} : vector<16xf32>
// CHECK: linalg.generic {{.*}} iterator_types = ["reduction", "parallel"]} ins(%[[PART]], %{{.*}} : {{.*}})
// CHECK: linalg.generic {{.*}} ins(%[[SHIFT]], %{{.*}}, %{{.*}} : {{.*}}) outs(%[[MEAN]], %[[VAR]] : memref<4xvector<16xf32>>, memref<4xvector<16xf32>>)
// CHECK: arith.maximumf {{.*}} : vector<16xf32>
module @one_pass_statistics {
  func.func @train_step(%x: tensor<2x4x4x64xbf16>, %g: tensor<64xf32>) -> tensor<2x4x4x64xbf16> {
    %y, %m, %v, %nm, %nv = kiln.batch_norm_train %x, %g, %g, %g, %g epsilon 1.0e-5 momentum 0.9 : (tensor<2x4x4x64xbf16>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>) -> (tensor<2x4x4x64xbf16>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>)
    return %y : tensor<2x4x4x64xbf16>
  }
}

// -----

// kiln.activation and its backward are one linalg.generic each, 16 lanes at
// a time, with the scalar body of reference/src/activation.cpp (here SiLU:
// x / (1 + exp(-x)) as x * (1 / (1 + exp(-x))); hard-swish's backward:
// 0 below -3, dy (x/3 + 1/2) up to 3, dy above).
// CHECK-LABEL: module @activation
// CHECK: linalg.generic {{.*}} ins(%{{.*}} : memref<1xvector<16xf32>>) outs(%{{.*}} : memref<1xvector<16xf32>>)
// CHECK-NEXT: ^bb0(%[[X:.*]]: vector<16xf32>, %{{.*}}: vector<16xf32>):
// CHECK: %[[N:.*]] = arith.negf %[[X]]
// CHECK-NEXT: %[[E:.*]] = math.exp %[[N]]
// CHECK-NEXT: %[[D:.*]] = arith.addf %{{.*}}, %[[E]]
// CHECK-NEXT: %[[S:.*]] = arith.divf %{{.*}}, %[[D]]
// CHECK-NEXT: %[[Y:.*]] = arith.mulf %[[X]], %[[S]]
// CHECK-NEXT: linalg.yield %[[Y]]
// CHECK: linalg.generic {{.*}} ins(%{{.*}}, %{{.*}} : memref<1xvector<16xf32>>, memref<1xvector<16xf32>>)
// CHECK-NEXT: ^bb0(%[[DY:.*]]: vector<16xf32>, %[[XB:.*]]: vector<16xf32>, %{{.*}}: vector<16xf32>):
// CHECK: %[[MID:.*]] = arith.mulf %[[DY]]
// CHECK: %[[LE:.*]] = arith.cmpf ole, %[[XB]]
// CHECK-NEXT: %[[UP:.*]] = arith.select %[[LE]], %[[MID]], %[[DY]]
// CHECK: %[[LT:.*]] = arith.cmpf olt, %[[XB]]
// CHECK-NEXT: %[[DX:.*]] = arith.select %[[LT]], %{{.*}}, %[[UP]]
// CHECK-NEXT: linalg.yield %[[DX]]
module @activation {
  func.func @train_step(%x: tensor<2x8xf32>, %dy: tensor<2x8xf32>) -> (tensor<2x8xf32>, tensor<2x8xf32>) {
    %y = kiln.activation silu %x : tensor<2x8xf32>
    %dx = kiln.activation_backward hard_swish %dy, %x : tensor<2x8xf32>
    return %y, %dx : tensor<2x8xf32>, tensor<2x8xf32>
  }
}

// -----

// Negative case: an activation computing in nChw16c must read its operand
// so stored.
func.func @train_step(%x: tensor<2x4x4x16xf32>) -> tensor<2x4x4x16xf32> {
  // expected-error @+1 {{'kiln.activation' op reads operand #0 as nChw16c but it is stored nhwc (a kiln.reorder is missing)}}
  %y = kiln.activation sigmoid %x {kiln.layout = #kiln.layout<nChw16c>} : tensor<2x4x4x16xf32>
  return %y : tensor<2x4x4x16xf32>
}

// -----

// kiln.broadcast_binary is one parallel linalg.generic reading the broadcast
// operand with 0 for its unit dimensions; its backward sums dy * x in f32
// over them (reduction loops) into a zeroed temporary, then stores it.
// 32 channels: 16 to a vector<16xf32> element.
// CHECK-DAG: #[[$ID:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
// CHECK-DAG: #[[$BC:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, 0, 0, d3)>
// CHECK-LABEL: module @broadcast_mul
// CHECK: linalg.generic {indexing_maps = [#[[$ID]], #[[$BC]], #[[$ID]]], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%{{.*}}, %{{.*}} : memref<2x3x3x2xvector<16xf32>>, memref<2x1x1x2xvector<16xf32>>)
// CHECK-NEXT: ^bb0(%[[A:.*]]: vector<16xf32>, %[[B:.*]]: vector<16xf32>, %{{.*}}: vector<16xf32>):
// CHECK-NEXT: %[[M:.*]] = arith.mulf %[[A]], %[[B]]
// CHECK-NEXT: linalg.yield %[[M]]
// CHECK: linalg.fill ins(%{{.*}} : vector<16xf32>) outs(%[[SUM:.*]] : memref<2x1x1x2xvector<16xf32>>)
// CHECK: linalg.generic {indexing_maps = [#[[$ID]], #[[$ID]], #[[$BC]]], iterator_types = ["parallel", "reduction", "reduction", "parallel"]} {{.*}} outs(%[[SUM]] : memref<2x1x1x2xvector<16xf32>>)
// CHECK-NEXT: ^bb0(%[[DY:.*]]: vector<16xf32>, %[[X:.*]]: vector<16xf32>, %[[ACC:.*]]: vector<16xf32>):
// CHECK-NEXT: %[[P:.*]] = arith.mulf %[[DY]], %[[X]]
// CHECK-NEXT: %[[S:.*]] = arith.addf %[[P]], %[[ACC]]
// CHECK-NEXT: linalg.yield %[[S]]
// CHECK: linalg.generic {{.*}} ins(%[[SUM]] : memref<2x1x1x2xvector<16xf32>>)
module @broadcast_mul {
  func.func @train_step(%x: tensor<2x3x3x32xf32>, %s: tensor<2x1x1x32xf32>) -> (tensor<2x3x3x32xf32>, tensor<2x1x1x32xf32>) {
    %y = kiln.broadcast_binary mul %x, %s : (tensor<2x3x3x32xf32>, tensor<2x1x1x32xf32>) -> tensor<2x3x3x32xf32>
    %ds = kiln.broadcast_binary_backward mul wrt rhs %y lhs %x : (tensor<2x3x3x32xf32>, tensor<2x3x3x32xf32>) -> tensor<2x1x1x32xf32>
    return %y, %ds : tensor<2x3x3x32xf32>, tensor<2x1x1x32xf32>
  }
}

// -----

// 3 channels: scalar loops.
// CHECK-LABEL: module @broadcast_mul_scalar
// CHECK: linalg.generic {{.*}} ins(%{{.*}}, %{{.*}} : memref<2x3x3x3xf32>, memref<2x1x1x3xf32>) outs(%{{.*}} : memref<2x3x3x3xf32>)
module @broadcast_mul_scalar {
  func.func @train_step(%x: tensor<2x3x3x3xf32>, %s: tensor<2x1x1x3xf32>) -> tensor<2x3x3x3xf32> {
    %y = kiln.broadcast_binary mul %x, %s : (tensor<2x3x3x3xf32>, tensor<2x1x1x3xf32>) -> tensor<2x3x3x3xf32>
    return %y : tensor<2x3x3x3xf32>
  }
}

// -----

// Both operands broadcast ([2, 1, 3, 3] / [1, 3, 1, 3]; 3 channels, scalar
// loops); division's rhs gradient -dy * lhs / rhs^2 reads both and sums
// over the batch and the width; sub's lhs gradient (an operand of dy's
// shape) is dy itself and its rhs gradient -dy summed.
// CHECK-DAG: #[[$ID:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
// CHECK-DAG: #[[$A:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, 0, d2, d3)>
// CHECK-DAG: #[[$B:.*]] = affine_map<(d0, d1, d2, d3) -> (0, d1, 0, d3)>
// CHECK-LABEL: module @broadcast_div
// CHECK: linalg.generic {indexing_maps = [#[[$A]], #[[$B]], #[[$ID]]], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%{{.*}}, %{{.*}} : memref<2x1x3x3xf32>, memref<1x3x1x3xf32>) outs(%{{.*}} : memref<2x3x3x3xf32>)
// CHECK-NEXT: ^bb0(%[[A:.*]]: f32, %[[B:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT: %[[Q:.*]] = arith.divf %[[A]], %[[B]]
// CHECK-NEXT: linalg.yield %[[Q]]
// CHECK: linalg.fill ins(%{{.*}} : f32) outs(%[[SUM:.*]] : memref<1x3x1x3xf32>)
// CHECK: linalg.generic {indexing_maps = [#[[$ID]], #[[$A]], #[[$B]], #[[$B]]], iterator_types = ["reduction", "parallel", "reduction", "parallel"]} {{.*}} outs(%[[SUM]] : memref<1x3x1x3xf32>)
// CHECK-NEXT: ^bb0(%[[DY:.*]]: f32, %[[L:.*]]: f32, %[[R:.*]]: f32, %[[ACC:.*]]: f32):
// CHECK-NEXT: %[[N:.*]] = arith.mulf %[[DY]], %[[L]]
// CHECK-NEXT: %[[SQ:.*]] = arith.mulf %[[R]], %[[R]]
// CHECK-NEXT: %[[D:.*]] = arith.divf %[[N]], %[[SQ]]
// CHECK-NEXT: %[[NEG:.*]] = arith.negf %[[D]]
// CHECK-NEXT: %[[S:.*]] = arith.addf %[[NEG]], %[[ACC]]
// CHECK-NEXT: linalg.yield %[[S]]
module @broadcast_div {
  func.func @train_step(%a: tensor<2x1x3x3xf32>, %b: tensor<1x3x1x3xf32>) -> (tensor<2x3x3x3xf32>, tensor<1x3x1x3xf32>) {
    %y = kiln.broadcast_binary div %a, %b : (tensor<2x1x3x3xf32>, tensor<1x3x1x3xf32>) -> tensor<2x3x3x3xf32>
    %db = kiln.broadcast_binary_backward div wrt rhs %y lhs %a rhs %b : (tensor<2x3x3x3xf32>, tensor<2x1x3x3xf32>, tensor<1x3x1x3xf32>) -> tensor<1x3x1x3xf32>
    return %y, %db : tensor<2x3x3x3xf32>, tensor<1x3x1x3xf32>
  }
}

// -----

// A gradient with nothing to sum (mul's lhs of dy's shape) is one parallel
// loop writing dy * rhs straight to its result: no temporary.
// CHECK-LABEL: module @broadcast_mul_lhs_gradient
// CHECK-NOT: linalg.fill
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%{{.*}}, %{{.*}} : memref<2x3x3x2xvector<16xf32>>, memref<2x1x1x2xvector<16xf32>>)
// CHECK-NEXT: ^bb0(%[[DY:.*]]: vector<16xf32>, %[[S:.*]]: vector<16xf32>, %{{.*}}: vector<16xf32>):
// CHECK-NEXT: %[[M:.*]] = arith.mulf %[[DY]], %[[S]]
// CHECK-NEXT: linalg.yield %[[M]]
// CHECK-NOT: linalg.fill
module @broadcast_mul_lhs_gradient {
  func.func @train_step(%dy: tensor<2x3x3x32xf32>, %s: tensor<2x1x1x32xf32>) -> tensor<2x3x3x32xf32> {
    %dx = kiln.broadcast_binary_backward mul wrt lhs %dy rhs %s : (tensor<2x3x3x32xf32>, tensor<2x1x1x32xf32>) -> tensor<2x3x3x32xf32>
    return %dx : tensor<2x3x3x32xf32>
  }
}

// -----

// Negative case: broadcast_binary computes NHWC only.
func.func @train_step(%x: tensor<2x4x4x16xf32>, %s: tensor<2x1x1x16xf32>) -> tensor<2x4x4x16xf32> {
  // expected-error @+1 {{'kiln.layout' on an op that computes in NHWC only}}
  %y = kiln.broadcast_binary mul %x, %s {kiln.layout = #kiln.layout<nChw16c>} : (tensor<2x4x4x16xf32>, tensor<2x1x1x16xf32>) -> tensor<2x4x4x16xf32>
  return %y : tensor<2x4x4x16xf32>
}

// -----

// kiln.bias_add reads the bias as [1, 1, 1, C]; its backward sums dy per
// channel in f32 (reduction loops over N, H, W).
// CHECK-DAG: #[[$ID:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
// CHECK-DAG: #[[$CH:.*]] = affine_map<(d0, d1, d2, d3) -> (0, 0, 0, d3)>
// CHECK-LABEL: module @bias_add
// CHECK: linalg.generic {indexing_maps = [#[[$ID]], #[[$CH]], #[[$ID]]], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%{{.*}}, %{{.*}} : memref<2x3x3x1xvector<16xf32>>, memref<1x1x1x1xvector<16xf32>>)
// CHECK-NEXT: ^bb0(%[[A:.*]]: vector<16xf32>, %[[B:.*]]: vector<16xf32>, %{{.*}}: vector<16xf32>):
// CHECK-NEXT: %[[S:.*]] = arith.addf %[[A]], %[[B]]
// CHECK-NEXT: linalg.yield %[[S]]
// CHECK: linalg.fill ins(%{{.*}} : vector<16xf32>) outs(%[[SUM:.*]] : memref<1x1x1x1xvector<16xf32>>)
// CHECK: linalg.generic {indexing_maps = [#[[$ID]], #[[$CH]]], iterator_types = ["reduction", "reduction", "reduction", "parallel"]} ins(%{{.*}} : memref<2x3x3x1xvector<16xf32>>) outs(%[[SUM]] : memref<1x1x1x1xvector<16xf32>>)
module @bias_add {
  func.func @train_step(%x: tensor<2x3x3x16xf32>, %b: tensor<16xf32>) -> (tensor<2x3x3x16xf32>, tensor<16xf32>) {
    %y = kiln.bias_add %x, %b : (tensor<2x3x3x16xf32>, tensor<16xf32>) -> tensor<2x3x3x16xf32>
    %db = kiln.bias_add_backward %y : (tensor<2x3x3x16xf32>) -> tensor<16xf32>
    return %y, %db : tensor<2x3x3x16xf32>, tensor<16xf32>
  }
}

// -----

// Negative case: bias_add computes NHWC only.
func.func @train_step(%x: tensor<2x4x4x16xf32>, %b: tensor<16xf32>) -> tensor<2x4x4x16xf32> {
  // expected-error @+1 {{'kiln.layout' on an op that computes in NHWC only}}
  %y = kiln.bias_add %x, %b {kiln.layout = #kiln.layout<nChw16c>} : (tensor<2x4x4x16xf32>, tensor<16xf32>) -> tensor<2x4x4x16xf32>
  return %y : tensor<2x4x4x16xf32>
}

// -----

// A ceil-mode max pool (3x3, stride 2, 8 rows to 4) loops over its 4 output
// rows and columns; the last window's third tap, row 8, fails the bounds
// check against the 8 input rows like padding (so it never wins).
// CHECK-LABEL: module @ceil_pool
// CHECK: scf.parallel
// CHECK: %[[C4:.*]] = arith.constant 4 : index
// CHECK: scf.for %[[OH:.*]] = %{{.*}} to %[[C4]]
// CHECK: %[[C8:.*]] = arith.constant 8 : index
// CHECK: arith.cmpi slt, %{{.*}}, %[[C8]] : index
module @ceil_pool {
  func.func @train_step(%x: tensor<2x8x8x3xf32>) -> tensor<2x4x4x3xf32> {
    %y = kiln.max_pool %x window [3, 3] stride [2, 2] pad [0, 0, 0, 0] ceil_mode : (tensor<2x8x8x3xf32>) -> tensor<2x4x4x3xf32>
    return %y : tensor<2x4x4x3xf32>
  }
}
