// RUN: kiln-opt %s -split-input-file -verify-diagnostics --kiln-convert-to-sa | FileCheck %s
// RUN: kiln-opt %s -split-input-file -verify-diagnostics --kiln-convert-to-sa=fuse=0 | FileCheck %s --check-prefix=OFF

// The fused schedule (docs/systolic.md, "Fusion"). conv1's epilogue sums its
// output blocks (and their squares) while they are on chip, so its batch
// norm makes no statistics pass and applies the relu as it normalizes; the
// second batch norm adds the residual and rectifies in its normalizing pass
// (the normalized tile rounded to the output's type first, as the unfused
// batch norm's output is); the backward pass recomputes the relu mask from
// x with the forward's scale and shift, so relu_backward disappears. (Its
// gradient is the step's output, so that it depends on conv2 and is not
// interleaved with it.)

// CHECK-LABEL: sa.program @fuse
// CHECK: sa.buffer @[[M1:t[0-9]+]] : onchip f32 [2, 8]
// CHECK: sa.buffer @[[SS:t[0-9]+]] : onchip f32 [2, 8]
// CHECK: sa.source "conv2d" "conv1"
// CHECK: sa.vector fill () -> (@[[M1]][0]) rows 1 channels 16
// CHECK: sa.matmul mxu 0
// CHECK: sa.vector copy ({{.*}}) -> (@[[C1:t[0-9]+]][0]) rows 36 channels 8
// CHECK: sa.vector channel_moments (@[[C1]][0]) -> (@[[M1]][0], @[[M1]][8]) rows 36 channels 8
// CHECK: sa.matmul mxu 1
// CHECK: sa.vector channel_moments (@[[C1]][288]) -> (@[[M1]][0], @[[M1]][8]) rows 36 channels 8
// CHECK: sa.source "batch_norm_train" "conv1"
// conv2 reads the normalized output: it is lowered with the batch norm
// (pipelined), its tiles after the batch norm's tiles they read; the batch
// norm's instructions name their op.
// CHECK-NEXT: sa.source "conv2d" "conv2"
// CHECK-NOT: channel_moments {{.*}}sa.op = 1
// CHECK: sa.vector bn_stats (@[[M1]][0], @[[M1]][8], {{.*}}) -> ({{.*}}, @[[SS]][0], @[[SS]][8], {{.*}}) {{.*}}{sa.op = 1 : i64}
// CHECK-NEXT: sa.vector channel_affine (@[[C1]][0], @[[SS]][0], @[[SS]][8]) -> ({{.*}}) rows 72 channels 8 iattrs [1] {sa.op = 1 : i64}
// CHECK: sa.source "batch_norm_train" "conv2"
// CHECK: sa.vector bn_stats
// CHECK-NEXT: sa.vector channel_affine ({{.*}}) -> (@[[T:[A-Za-z0-9._]+]][0]) rows 72 channels 8 iattrs [0]
// CHECK-NEXT: sa.vector add (@[[T]][0], {{.*}}) -> (@[[Y:[A-Za-z0-9._]+]][0]) rows 72 channels 8
// CHECK-NEXT: sa.vector relu (@[[Y]][0]) -> (@[[Y]][0]) rows 72 channels 8
// CHECK-NOT: sa.source "add"
// CHECK-NOT: sa.source "relu
// CHECK: sa.source "batch_norm_backward"
// CHECK: sa.vector channel_affine (@[[C1]][0], @[[SS]][0], @[[SS]][8]) -> (@[[MASK:[A-Za-z0-9._]+]][0]) rows 72 channels 8 iattrs [0]
// CHECK-NEXT: sa.vector relu_grad ({{.*}}, @[[MASK]][0]) -> (@[[MASK]][0])
// CHECK-NEXT: sa.vector channel_centered_dot (@[[MASK]][0], @[[C1]][0], {{.*}})
// CHECK: sa.vector bn_grad_coeffs
// CHECK: sa.vector channel_affine (@[[C1]][0], @[[SS]][0], @[[SS]][8]) -> (@[[MASK2:[A-Za-z0-9._]+]][0])
// CHECK-NEXT: sa.vector relu_grad ({{.*}}, @[[MASK2]][0]) -> (@[[MASK2]][0])
// CHECK-NEXT: sa.vector channel_affine2 (@[[MASK2]][0], @[[C1]][0], {{.*}})

// Unfused: a statistics pass per batch norm, and one pass per op.
// OFF-LABEL: sa.program @fuse
// OFF: sa.source "conv2d" "conv1"
// OFF-NOT: channel_moments
// OFF: sa.source "batch_norm_train" "conv1"
// OFF: sa.vector channel_moments
// OFF: sa.source "relu" "conv1"
// OFF: sa.source "batch_norm_train" "conv2"
// OFF: sa.source "add" "conv2"
// OFF: sa.source "relu" "conv2"
// OFF: sa.source "relu_backward"
// OFF: sa.source "batch_norm_backward"
module @fuse {
  kiln.variable parameter @conv1.weight : tensor<3x3x4x8xf32> init he_normal
  kiln.variable parameter @conv2.weight : tensor<1x1x8x8xf32> init he_normal
  func.func @train_step(%x: tensor<2x6x6x4xf32>, %g: tensor<8xf32>, %b: tensor<8xf32>, %dout: tensor<2x6x6x8xf32>) -> (tensor<2x6x6x8xf32>, tensor<2x6x6x8xf32>, tensor<8xf32>) {
    %w1 = kiln.read @conv1.weight : tensor<3x3x4x8xf32>
    %w2 = kiln.read @conv2.weight : tensor<1x1x8x8xf32>
    %c1 = kiln.conv2d %x, %w1 stride [1, 1] pad [1, 1, 1, 1] : (tensor<2x6x6x4xf32>, tensor<3x3x4x8xf32>) -> tensor<2x6x6x8xf32>
    %y1, %m1, %v1, %nm1, %nv1 = kiln.batch_norm_train %c1, %g, %b, %g, %g epsilon 1.0e-5 momentum 0.9 : (tensor<2x6x6x8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<2x6x6x8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>)
    %r1 = kiln.relu %y1 : tensor<2x6x6x8xf32>
    %c2 = kiln.conv2d %r1, %w2 stride [1, 1] pad [0, 0, 0, 0] : (tensor<2x6x6x8xf32>, tensor<1x1x8x8xf32>) -> tensor<2x6x6x8xf32>
    %y2, %m2, %v2, %nm2, %nv2 = kiln.batch_norm_train %c2, %g, %b, %g, %g epsilon 1.0e-5 momentum 0.9 : (tensor<2x6x6x8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<2x6x6x8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>)
    %s = kiln.add %y2, %r1 : tensor<2x6x6x8xf32>
    %r2 = kiln.relu %s : tensor<2x6x6x8xf32>
    %d = kiln.relu_backward %r2, %r1 : tensor<2x6x6x8xf32>
    %dx, %dg, %db = kiln.batch_norm_backward %d, %c1, %g, %m1, %v1 epsilon 1.0e-5 : (tensor<2x6x6x8xf32>, tensor<2x6x6x8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<2x6x6x8xf32>, tensor<8xf32>, tensor<8xf32>)
    return %r2, %dx, %dg : tensor<2x6x6x8xf32>, tensor<2x6x6x8xf32>, tensor<8xf32>
  }
}

// -----

// A batch norm fused with its convolution updates its running statistics in
// place, as an unfused one does, unless the old value is read after it (the
// mean, added to the batch mean here): then the update is copied at the end of the step,
// and the copy belongs to the layer "bn", not to "bn.running_mean".
// CHECK-LABEL: sa.program @running_statistics
// CHECK: sa.source "conv2d" "conv"
// CHECK: sa.source "assign" "bn"
// CHECK-NOT: sa.source "assign"
// OFF-LABEL: sa.program @running_statistics
// OFF: sa.source "assign" "bn"
// OFF-NOT: sa.source "assign"
module @running_statistics {
  kiln.variable parameter @conv.weight : tensor<1x1x4x8xf32> init he_normal
  kiln.variable parameter @bn.weight : tensor<8xf32> init ones
  kiln.variable parameter @bn.bias : tensor<8xf32> init zeros
  kiln.variable state @bn.running_mean : tensor<8xf32> init zeros
  kiln.variable state @bn.running_var : tensor<8xf32> init ones
  func.func @train_step(%x: tensor<2x6x6x4xf32>) -> (tensor<2x6x6x8xf32>, tensor<8xf32>) {
    %w = kiln.read @conv.weight : tensor<1x1x4x8xf32>
    %g = kiln.read @bn.weight : tensor<8xf32>
    %b = kiln.read @bn.bias : tensor<8xf32>
    %m0 = kiln.read @bn.running_mean : tensor<8xf32>
    %v0 = kiln.read @bn.running_var : tensor<8xf32>
    %c = kiln.conv2d %x, %w stride [1, 1] pad [0, 0, 0, 0] : (tensor<2x6x6x4xf32>, tensor<1x1x4x8xf32>) -> tensor<2x6x6x8xf32>
    %y, %m, %v, %rm, %rv = kiln.batch_norm_train %c, %g, %b, %m0, %v0 epsilon 1.0e-5 momentum 0.9 : (tensor<2x6x6x8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<2x6x6x8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>)
    kiln.assign @bn.running_mean, %rm : tensor<8xf32>
    kiln.assign @bn.running_var, %rv : tensor<8xf32>
    %k = kiln.add %m0, %m : tensor<8xf32>
    return %y, %k : tensor<2x6x6x8xf32>, tensor<8xf32>
  }
}

// -----

// What the batch norms leave (a gradient sum and the relu mask after it)
// is one chain: one pass, the sum rounded in its slot, not stored.

// CHECK-LABEL: sa.program @chain
// CHECK: sa.source "fused_elementwise"
// CHECK-COUNT-3: sa.dma @input
// CHECK: sa.vector add (@[[A:[A-Za-z0-9._]+]][0], @[[B:[A-Za-z0-9._]+]][0]) -> (@[[S:[A-Za-z0-9._]+]][0]) rows 16 channels 8
// CHECK-NEXT: sa.vector relu_grad (@[[S]][0], {{.*}}) -> (@[[O:[A-Za-z0-9._]+]][0]) rows 16 channels 8
// CHECK-NEXT: sa.dma @[[O]] {{.*}} to @{{.*}}
// CHECK-NOT: sa.dma @[[S]]
// OFF-LABEL: sa.program @chain
// OFF: sa.source "add"
// OFF: sa.source "relu_backward"
module @chain {
  func.func @train_step(%a: tensor<2x2x4x8xbf16>, %b: tensor<2x2x4x8xbf16>, %y: tensor<2x2x4x8xbf16>) -> tensor<2x2x4x8xbf16> {
    %s = kiln.add %a, %b : tensor<2x2x4x8xbf16>
    %d = kiln.relu_backward %s, %y : tensor<2x2x4x8xbf16>
    return %d : tensor<2x2x4x8xbf16>
  }
}

// -----

// A filter gradient, the batch-norm backward interleaved with it and the
// data gradient reading the batch norm's dx are one step (markers first;
// instructions of the first two name their ops), the batch norm's sums
// taken in the epilogue of the data gradient before.
// CHECK-LABEL: sa.program @triple
// CHECK: sa.source "conv2d_backward_data"
// CHECK: sa.source "conv2d_backward_filter"
// CHECK-NEXT: sa.source "batch_norm_backward"
// CHECK-NEXT: sa.source "conv2d_backward_data"
// CHECK: sa.matmul {{.*}}{sa.op = 1 : i64}
// CHECK: sa.vector channel_affine2 ({{.*}}) -> (@[[DX:t[0-9]+]][0]) {{.*}}{sa.op = 2 : i64}
// CHECK: sa.matmul mxu {{[01]}} @[[DX]] {{.*}}after
// OFF-LABEL: sa.program @triple
// OFF: sa.source "conv2d_backward_filter"
// OFF-NEXT: sa.dma
// OFF: sa.source "batch_norm_backward"
// OFF-NOT: sa.op
module @triple {
  func.func @train_step(%dy0: tensor<2x6x6x8xf32>, %w0: tensor<3x3x8x8xf32>, %x: tensor<2x6x6x8xf32>, %fdy: tensor<2x6x6x8xf32>, %c: tensor<2x6x6x8xf32>, %g: tensor<8xf32>, %m: tensor<8xf32>, %v: tensor<8xf32>, %w1: tensor<3x3x8x8xf32>) -> (tensor<3x3x8x8xf32>, tensor<2x6x6x8xf32>, tensor<8xf32>, tensor<8xf32>) {
    %d0 = kiln.conv2d_backward_data %dy0, %w0 stride [1, 1] pad [1, 1, 1, 1] : (tensor<2x6x6x8xf32>, tensor<3x3x8x8xf32>) -> tensor<2x6x6x8xf32>
    %dw = kiln.conv2d_backward_filter %x, %fdy stride [1, 1] pad [1, 1, 1, 1] : (tensor<2x6x6x8xf32>, tensor<2x6x6x8xf32>) -> tensor<3x3x8x8xf32>
    %dx, %dg, %db = kiln.batch_norm_backward %d0, %c, %g, %m, %v epsilon 1.0e-5 : (tensor<2x6x6x8xf32>, tensor<2x6x6x8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<2x6x6x8xf32>, tensor<8xf32>, tensor<8xf32>)
    %d1 = kiln.conv2d_backward_data %dx, %w1 stride [1, 1] pad [1, 1, 1, 1] : (tensor<2x6x6x8xf32>, tensor<3x3x8x8xf32>) -> tensor<2x6x6x8xf32>
    return %dw, %d1, %dg, %db : tensor<3x3x8x8xf32>, tensor<2x6x6x8xf32>, tensor<8xf32>, tensor<8xf32>
  }
}

// -----

// Negative case: a data gradient that does not read the batch norm's dx
// stays out of the pair's step.
// CHECK-LABEL: sa.program @no_consumer
// CHECK: sa.source "conv2d_backward_filter"
// CHECK-NEXT: sa.source "batch_norm_backward"
// CHECK-NEXT: sa.dma
// CHECK: sa.source "conv2d_backward_data"
// OFF-LABEL: sa.program @no_consumer
module @no_consumer {
  func.func @train_step(%dy0: tensor<2x6x6x8xf32>, %w0: tensor<3x3x8x8xf32>, %x: tensor<2x6x6x8xf32>, %fdy: tensor<2x6x6x8xf32>, %c: tensor<2x6x6x8xf32>, %g: tensor<8xf32>, %m: tensor<8xf32>, %v: tensor<8xf32>, %w1: tensor<3x3x8x8xf32>) -> (tensor<3x3x8x8xf32>, tensor<2x6x6x8xf32>, tensor<2x6x6x8xf32>, tensor<8xf32>, tensor<8xf32>) {
    %d0 = kiln.conv2d_backward_data %dy0, %w0 stride [1, 1] pad [1, 1, 1, 1] : (tensor<2x6x6x8xf32>, tensor<3x3x8x8xf32>) -> tensor<2x6x6x8xf32>
    %dw = kiln.conv2d_backward_filter %x, %fdy stride [1, 1] pad [1, 1, 1, 1] : (tensor<2x6x6x8xf32>, tensor<2x6x6x8xf32>) -> tensor<3x3x8x8xf32>
    %dx, %dg, %db = kiln.batch_norm_backward %d0, %c, %g, %m, %v epsilon 1.0e-5 : (tensor<2x6x6x8xf32>, tensor<2x6x6x8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<2x6x6x8xf32>, tensor<8xf32>, tensor<8xf32>)
    %d1 = kiln.conv2d_backward_data %c, %w1 stride [1, 1] pad [1, 1, 1, 1] : (tensor<2x6x6x8xf32>, tensor<3x3x8x8xf32>) -> tensor<2x6x6x8xf32>
    return %dw, %d1, %dx, %dg, %db : tensor<3x3x8x8xf32>, tensor<2x6x6x8xf32>, tensor<2x6x6x8xf32>, tensor<8xf32>, tensor<8xf32>
  }
}

// -----

// A max pool's gradient that feeds a batch-norm backward takes its sums in
// its epilogue: per result tile, after the gradient, the batch norm's x is
// loaded and summed against it (the sums zeroed first, stored last); the
// backward then makes one pass, with no reduction of its own.
// CHECK-LABEL: sa.program @pool_sums
// CHECK: sa.buffer @[[SUMS:t[0-9]+]] : onchip f32 [2, 8]
// CHECK: sa.source "max_pool_backward"
// CHECK: sa.vector fill () -> (@[[SUMS]][0]) rows 1 channels 16
// CHECK: sa.vector max_pool_grad ({{.*}}) -> (@[[D:[A-Za-z0-9._]+]][0])
// CHECK-NEXT: sa.dma @input2 {{.*}} to @[[X:s[0-9]+\.bnx\.[0-9]+]]
// CHECK-NEXT: sa.vector channel_centered_dot (@[[D]][0], @[[X]][0], {{.*}}) -> (@[[SUMS]][0], @[[SUMS]][8]) rows 128 channels 8
// CHECK: sa.source "batch_norm_backward"
// CHECK-NOT: channel_centered_dot
// CHECK-NOT: channel_sum
// CHECK: sa.vector bn_grad_coeffs (@[[SUMS]][0], @[[SUMS]][8], {{.*}})
// CHECK: sa.vector channel_affine2
// OFF-LABEL: sa.program @pool_sums
// OFF: sa.source "max_pool_backward"
// OFF-NOT: channel_centered_dot
// OFF: sa.source "batch_norm_backward"
// OFF: sa.vector channel_centered_dot
module @pool_sums {
  func.func @train_step(%dy: tensor<2x4x4x8xf32>, %px: tensor<2x8x8x8xf32>, %c: tensor<2x8x8x8xf32>, %g: tensor<8xf32>, %m: tensor<8xf32>, %v: tensor<8xf32>) -> (tensor<2x8x8x8xf32>, tensor<8xf32>, tensor<8xf32>) {
    %d = kiln.max_pool_backward %dy, %px window [3, 3] stride [2, 2] pad [1, 1, 1, 1] : (tensor<2x4x4x8xf32>, tensor<2x8x8x8xf32>) -> tensor<2x8x8x8xf32>
    %dx, %dg, %db = kiln.batch_norm_backward %d, %c, %g, %m, %v epsilon 1.0e-5 : (tensor<2x8x8x8xf32>, tensor<2x8x8x8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<2x8x8x8xf32>, tensor<8xf32>, tensor<8xf32>)
    return %dx, %dg, %db : tensor<2x8x8x8xf32>, tensor<8xf32>, tensor<8xf32>
  }
}

// -----

// Negative case: a max pool's gradient whose result no batch-norm backward
// reads (a relu's gradient does) keeps no sums.
// CHECK-LABEL: sa.program @pool_no_sums
// CHECK: sa.source "max_pool_backward"
// CHECK-NOT: sa.vector fill
// CHECK: sa.vector max_pool_grad
// CHECK-NOT: channel_centered_dot
// CHECK: sa.source "relu_backward"
// CHECK-NOT: channel_centered_dot
// OFF-LABEL: sa.program @pool_no_sums
module @pool_no_sums {
  func.func @train_step(%dy: tensor<2x4x4x8xf32>, %px: tensor<2x8x8x8xf32>, %y: tensor<2x8x8x8xf32>) -> tensor<2x8x8x8xf32> {
    %d = kiln.max_pool_backward %dy, %px window [3, 3] stride [2, 2] pad [1, 1, 1, 1] : (tensor<2x4x4x8xf32>, tensor<2x8x8x8xf32>) -> tensor<2x8x8x8xf32>
    %r = kiln.relu_backward %d, %y : tensor<2x8x8x8xf32>
    return %r : tensor<2x8x8x8xf32>
  }
}

// -----

// Negative case: a chain that yields one of its operands (only a hand-written
// kiln.fused_elementwise does) is refused.
module @yields_operand {
  func.func @train_step(%a: tensor<2x4xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>) {
    // expected-error @+1 {{kiln-convert-to-sa: a kiln.fused_elementwise that yields an operand is not supported}}
    %r:2 = kiln.fused_elementwise %a : (tensor<2x4xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>) {
    ^bb0(%x: tensor<2x4xf32>):
      %t = kiln.relu %x : tensor<2x4xf32>
      kiln.yield %t, %x : tensor<2x4xf32>, tensor<2x4xf32>
    }
    return %r#0, %r#1 : tensor<2x4xf32>, tensor<2x4xf32>
  }
}
