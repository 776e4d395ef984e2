// RUN: kiln-opt %s -split-input-file -verify-diagnostics --kiln-convert-to-sa | FileCheck %s
// RUN: kiln-opt %s -split-input-file -verify-diagnostics --kiln-convert-to-sa="profile=tpuv2 resident-fraction=0" | FileCheck %s --check-prefix=SPILL

// A convolution and a ReLU: the filter and input stay in HBM (host-visible),
// the convolution's output stays on chip, the result goes back to HBM.

// CHECK-LABEL: sa.program @tiny batch 2 target {{{.*}}mxu_count = 2 : i64, name = "tpuv3"
// CHECK-DAG: sa.buffer @conv.weight : hbm f32 [3, 3, 2, 4] role parameter binding "conv.weight" init he_normal
// CHECK-DAG: sa.buffer @input0 : hbm f32 [2, 6, 6, 2] role input binding "arg0"
// CHECK-DAG: sa.buffer @[[Y:t[0-9]+]] : onchip f32 [2, 6, 6, 4] offset 0
// CHECK-DAG: sa.buffer @[[OUT:t[0-9]+]] : hbm f32 [2, 6, 6, 4] role output binding "result0"
// CHECK: sa.source "conv2d" "conv"
// CHECK: %[[W:.+]] = sa.dma @conv.weight
// CHECK: %[[X0:.+]] = sa.dma @input0
// The 3x3 taps of 2 channels fold into one 18-row weight tile; one image
// per MXU.
// CHECK: %[[M0:.+]] = sa.matmul mxu 0 @{{.*}} <[1, 6, 6] x [3, 3, 2]
// CHECK-SAME: after %[[W]], %[[X0]]
// CHECK: sa.vector copy ({{.*}}) -> (@[[Y]][0]) rows 36 channels 4 after %[[M0]]
// CHECK: sa.matmul mxu 1
// CHECK: sa.vector copy ({{.*}}) -> (@[[Y]][144]) rows 36 channels 4
// CHECK: sa.source "relu" "conv"
// CHECK: %[[R:.+]] = sa.vector relu (@[[Y]][0]) -> (@{{.*}}[0]) rows 72 channels 4
// CHECK: sa.dma {{.*}} to @[[OUT]] {{.*}} after %[[R]]

// Without resident memory the convolution's output is spilled to HBM and
// streamed back for the ReLU (tpuv2: one MXU, so both images in one pass).
// SPILL-LABEL: sa.program @tiny batch 2 target {{{.*}}mxu_count = 1 : i64, name = "tpuv2"
// SPILL: sa.buffer @[[Y:t[0-9]+]] : hbm f32 [2, 6, 6, 4]
// SPILL: %[[M:.+]] = sa.matmul mxu 0 @{{.*}} <[2, 6, 6] x [3, 3, 2]
// SPILL-NOT: sa.matmul
// SPILL: %[[S:.+]] = sa.dma @{{.*}} to @[[Y]] {{.*}} after %[[M]]
// SPILL: sa.source "relu" "conv"
// SPILL: sa.dma @[[Y]] {{.*}} after %[[S]]
module @tiny {
  kiln.variable parameter @conv.weight : tensor<3x3x2x4xf32> init he_normal
  func.func @train_step(%x: tensor<2x6x6x2xf32>) -> tensor<2x6x6x4xf32> {
    %w = kiln.read @conv.weight : tensor<3x3x2x4xf32>
    %y = kiln.conv2d %x, %w stride [1, 1] pad [1, 1, 1, 1] : (tensor<2x6x6x2xf32>, tensor<3x3x2x4xf32>) -> tensor<2x6x6x4xf32>
    %r = kiln.relu %y : tensor<2x6x6x4xf32>
    return %r : tensor<2x6x6x4xf32>
  }
}

// -----

// An optimizer step updates the variables in place: no copy at the end.

// CHECK-LABEL: sa.program @sgd
// CHECK: sa.source "learning_rate" "optimizer"
// CHECK: sa.vector learning_rate
// CHECK: sa.source "sgd_update" "optimizer"
// CHECK: sa.vector sgd_update {{.*}} fattrs [9.000000e-01, 0.000000e+00, 0.000000e+00]
// CHECK: sa.dma {{.*}} to @w
// CHECK: sa.dma {{.*}} to @w.momentum
// CHECK-NOT: sa.source "assign"
// SPILL-LABEL: sa.program @sgd
module @sgd {
  kiln.variable parameter @w : tensor<8x4xf32> init he_normal
  kiln.variable state @w.momentum : tensor<8x4xf32> init zeros
  kiln.variable state @sched : tensor<1xf64> init constant value dense<1.000000e-01> : tensor<1xf64>
  func.func @train_step(%g: tensor<8x4xf32>, %step: tensor<i64>) -> tensor<f32> {
    %w = kiln.read @w : tensor<8x4xf32>
    %v = kiln.read @w.momentum : tensor<8x4xf32>
    %p = kiln.read @sched : tensor<1xf64>
    %lr = kiln.learning_rate %step, %p schedule constant : (tensor<i64>, tensor<1xf64>) -> tensor<f32>
    %w2, %v2 = kiln.sgd_update %w, %g, %v, %lr momentum 0.899999976 weight_decay 0.000000e+00 : tensor<8x4xf32>
    kiln.assign @w, %w2 : tensor<8x4xf32>
    kiln.assign @w.momentum, %v2 : tensor<8x4xf32>
    return %lr : tensor<f32>
  }
}

// -----

// Negative case: shapes must be static.
module @dynamic {
  // expected-error @+1 {{kiln-convert-to-sa: needs static tensor shapes (run --kiln-specialize-batch)}}
  func.func @train_step(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
    %r = kiln.relu %x : tensor<?x4xf32>
    return %r : tensor<?x4xf32>
  }
}

// -----

// Negative case: no training step.
// expected-error @+1 {{kiln-convert-to-sa: no function 'train_step'}}
module @none {
  func.func @forward(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
    return %x : tensor<2x4xf32>
  }
}

// -----

// Negative case: a step result that is not computed by the step.
module @passthrough {
  func.func @train_step(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
    // expected-error @+1 {{kiln-convert-to-sa: result 0 must be a value computed by the step}}
    return %x : tensor<2x4xf32>
  }
}

// -----

// Negative case: a batch-norm backward with a relu mask (relu_offset,
// --kiln-fuse) recomputes the mask with its forward's scale and shift, so
// its statistics must come from a training batch norm of the step.
module @fused_backward {
  func.func @train_step(%x: tensor<2x2x2x4xf32>, %g: tensor<4xf32>) -> tensor<2x2x2x4xf32> {
    // expected-error @+1 {{kiln-convert-to-sa: batch norm backward with a relu mask whose batch statistics come from no training batch norm of this step}}
    %dx, %dg, %db = kiln.batch_norm_backward %x, %x, %g, %g, %g relu_offset %g epsilon 1.0e-5 : (tensor<2x2x2x4xf32>, tensor<2x2x2x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<2x2x2x4xf32>, tensor<4xf32>, tensor<4xf32>)
    return %dx : tensor<2x2x2x4xf32>
  }
}

// -----

// Negative case: bf16 weight copies (--kiln-bf16-weight-copies) are for the
// x86 backend; the device program rounds the weights itself.
module @copies {
  kiln.variable parameter @w : tensor<4xf32> init zeros
  // expected-error @+1 {{kiln-convert-to-sa: copy variables (--kiln-bf16-weight-copies) are for x86; the device program casts the weights itself}}
  kiln.variable state @w.bf16 : tensor<4xbf16> init copy of @w
  func.func @train_step(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
    return %x : tensor<2x4xf32>
  }
}

