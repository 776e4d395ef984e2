// RUN: kiln-opt %s -split-input-file -verify-diagnostics

// Every verifier message of the sa dialect.

sa.program @p batch 1 target {mxu_count = 2 : i64, array_rows = 128 : i64, array_cols = 128 : i64, onchip_bytes = 1024 : i64, vector_lanes = 1024 : i64, clock_hz = 9.4e8 : f64, hbm_bytes_per_s = 4.5e11 : f64, ici_bytes_per_s = 7.0e10 : f64} {
  // expected-error @+1 {{'sa.buffer' op shape dimensions must be positive}}
  sa.buffer @a : hbm f32 [0, 4]
}

// -----

// expected-error @+1 {{'sa.program' op target lacks a positive integer 'mxu_count'}}
sa.program @p batch 1 target {array_rows = 128 : i64} {
}

// -----

// expected-error @+1 {{'sa.program' op target lacks a positive float 'clock_hz'}}
sa.program @p batch 1 target {mxu_count = 2 : i64, array_rows = 128 : i64, array_cols = 128 : i64, onchip_bytes = 1024 : i64, vector_lanes = 1024 : i64} {
}

// -----

sa.program @p batch 1 target {mxu_count = 2 : i64, array_rows = 128 : i64, array_cols = 128 : i64, onchip_bytes = 1024 : i64, vector_lanes = 1024 : i64, clock_hz = 9.4e8 : f64, hbm_bytes_per_s = 4.5e11 : f64, ici_bytes_per_s = 7.0e10 : f64} {
  // expected-error @+1 {{'sa.buffer' op on-chip buffer needs an offset}}
  sa.buffer @a : onchip f32 [4]
}

// -----

sa.program @p batch 1 target {mxu_count = 2 : i64, array_rows = 128 : i64, array_cols = 128 : i64, onchip_bytes = 1024 : i64, vector_lanes = 1024 : i64, clock_hz = 9.4e8 : f64, hbm_bytes_per_s = 4.5e11 : f64, ici_bytes_per_s = 7.0e10 : f64} {
  // expected-error @+1 {{'sa.buffer' op ends at byte 1040, beyond the target's 1024 bytes of on-chip memory}}
  sa.buffer @a : onchip f32 [4] offset 1024
}

// -----

sa.program @p batch 1 target {mxu_count = 2 : i64, array_rows = 128 : i64, array_cols = 128 : i64, onchip_bytes = 1024 : i64, vector_lanes = 1024 : i64, clock_hz = 9.4e8 : f64, hbm_bytes_per_s = 4.5e11 : f64, ici_bytes_per_s = 7.0e10 : f64} {
  // expected-error @+1 {{'sa.buffer' op HBM buffer cannot have an offset}}
  sa.buffer @a : hbm f32 [4] offset 8
}

// -----

sa.program @p batch 1 target {mxu_count = 2 : i64, array_rows = 128 : i64, array_cols = 128 : i64, onchip_bytes = 1024 : i64, vector_lanes = 1024 : i64, clock_hz = 9.4e8 : f64, hbm_bytes_per_s = 4.5e11 : f64, ici_bytes_per_s = 7.0e10 : f64} {
  // expected-error @+1 {{'sa.buffer' op role 'input' needs a binding}}
  sa.buffer @a : hbm f32 [4] role input
}

// -----

sa.program @p batch 1 target {mxu_count = 2 : i64, array_rows = 128 : i64, array_cols = 128 : i64, onchip_bytes = 1024 : i64, vector_lanes = 1024 : i64, clock_hz = 9.4e8 : f64, hbm_bytes_per_s = 4.5e11 : f64, ici_bytes_per_s = 7.0e10 : f64} {
  // expected-error @+1 {{'sa.buffer' op needs a value}}
  sa.buffer @a : hbm f32 [4] role constant
}

// -----

sa.program @p batch 1 target {mxu_count = 2 : i64, array_rows = 128 : i64, array_cols = 128 : i64, onchip_bytes = 1024 : i64, vector_lanes = 1024 : i64, clock_hz = 9.4e8 : f64, hbm_bytes_per_s = 4.5e11 : f64, ici_bytes_per_s = 7.0e10 : f64} {
  // expected-error @+1 {{'sa.buffer' op needs 4 values, has 2}}
  sa.buffer @a : hbm f32 [4] role constant value dense<[1.0, 2.0]> : tensor<2xf32>
}

// -----

sa.program @p batch 1 target {mxu_count = 2 : i64, array_rows = 128 : i64, array_cols = 128 : i64, onchip_bytes = 1024 : i64, vector_lanes = 1024 : i64, clock_hz = 9.4e8 : f64, hbm_bytes_per_s = 4.5e11 : f64, ici_bytes_per_s = 7.0e10 : f64} {
  // expected-error @+1 {{'sa.buffer' op normal initializer needs a standard deviation}}
  sa.buffer @a : hbm f32 [4, 4] role parameter binding "w" init normal
}

// -----

sa.program @p batch 1 target {mxu_count = 2 : i64, array_rows = 128 : i64, array_cols = 128 : i64, onchip_bytes = 1024 : i64, vector_lanes = 1024 : i64, clock_hz = 9.4e8 : f64, hbm_bytes_per_s = 4.5e11 : f64, ici_bytes_per_s = 7.0e10 : f64} {
  // expected-error @+1 {{'sa.buffer' op space-to-depth applies to NHWC inputs whose channels are a multiple of 4}}
  sa.buffer @a : hbm f32 [1, 4, 4, 3] role input binding "arg0" layout space_to_depth2
}

// -----

sa.program @p batch 1 target {mxu_count = 2 : i64, array_rows = 128 : i64, array_cols = 128 : i64, onchip_bytes = 1024 : i64, vector_lanes = 1024 : i64, clock_hz = 9.4e8 : f64, hbm_bytes_per_s = 4.5e11 : f64, ici_bytes_per_s = 7.0e10 : f64} {
  sa.buffer @a : hbm f32 [8]
  sa.buffer @b : onchip f32 [8] offset 0
  // expected-error @+1 {{'sa.dma' op source view is 1x8 but destination view is 1x4}}
  %0 = sa.dma @a #sa.view<[1] x [8], base 0> to @b #sa.view<[1] x [4], base 0>
}

// -----

sa.program @p batch 1 target {mxu_count = 2 : i64, array_rows = 128 : i64, array_cols = 128 : i64, onchip_bytes = 1024 : i64, vector_lanes = 1024 : i64, clock_hz = 9.4e8 : f64, hbm_bytes_per_s = 4.5e11 : f64, ici_bytes_per_s = 7.0e10 : f64} {
  sa.buffer @a : hbm f32 [8]
  // expected-error @+1 {{'sa.dma' op 'nowhere' does not name a buffer}}
  %0 = sa.dma @a #sa.view<[1] x [8], base 0> to @nowhere #sa.view<[1] x [8], base 0>
}

// -----

sa.program @p batch 1 target {mxu_count = 2 : i64, array_rows = 128 : i64, array_cols = 128 : i64, onchip_bytes = 1024 : i64, vector_lanes = 1024 : i64, clock_hz = 9.4e8 : f64, hbm_bytes_per_s = 4.5e11 : f64, ici_bytes_per_s = 7.0e10 : f64} {
  sa.buffer @a : hbm f32 [8]
  sa.buffer @b : hbm f32 [8]
  // expected-error @+1 {{'sa.dma' op must copy between HBM and on-chip memory}}
  %0 = sa.dma @a #sa.view<[1] x [8], base 0> to @b #sa.view<[1] x [8], base 0>
}

// -----

sa.program @p batch 1 target {mxu_count = 2 : i64, array_rows = 128 : i64, array_cols = 128 : i64, onchip_bytes = 1024 : i64, vector_lanes = 1024 : i64, clock_hz = 9.4e8 : f64, hbm_bytes_per_s = 4.5e11 : f64, ici_bytes_per_s = 7.0e10 : f64} {
  sa.buffer @a : hbm f32 [8]
  sa.buffer @b : onchip bf16 [8] offset 0
  // expected-error @+1 {{'sa.dma' op would convert f32 to bf16; only the vector unit converts}}
  %0 = sa.dma @a #sa.view<[1] x [8], base 0> to @b #sa.view<[1] x [8], base 0>
}

// -----

sa.program @p batch 1 target {mxu_count = 2 : i64, array_rows = 128 : i64, array_cols = 128 : i64, onchip_bytes = 1024 : i64, vector_lanes = 1024 : i64, clock_hz = 9.4e8 : f64, hbm_bytes_per_s = 4.5e11 : f64, ici_bytes_per_s = 7.0e10 : f64} {
  sa.buffer @a : hbm f32 [8]
  sa.buffer @b : onchip f32 [8] offset 0
  // expected-error @+1 {{'sa.dma' op destination view reaches elements [4, 11] of 'b', which has 8}}
  %0 = sa.dma @a #sa.view<[1] x [8], base 0, (stride 1, offset 0, bound 8, row [0], col [1])> to @b #sa.view<[1] x [8], base 4, (stride 1, offset 0, bound 8, row [0], col [1])>
}

// -----

sa.program @p batch 1 target {mxu_count = 2 : i64, array_rows = 128 : i64, array_cols = 128 : i64, onchip_bytes = 1024 : i64, vector_lanes = 1024 : i64, clock_hz = 9.4e8 : f64, hbm_bytes_per_s = 4.5e11 : f64, ici_bytes_per_s = 7.0e10 : f64} {
  sa.buffer @a : onchip f32 [8] offset 0
  // expected-error @+1 {{'sa.matmul' op shapes disagree: lhs 2x4, rhs 3x2, out 2x2}}
  %0 = sa.matmul mxu 0 @a #sa.view<[2] x [4], base 0>, @a #sa.view<[3] x [2], base 0> into @a #sa.view<[2] x [2], base 0>
}

// -----

sa.program @p batch 1 target {mxu_count = 2 : i64, array_rows = 128 : i64, array_cols = 128 : i64, onchip_bytes = 1024 : i64, vector_lanes = 1024 : i64, clock_hz = 9.4e8 : f64, hbm_bytes_per_s = 4.5e11 : f64, ici_bytes_per_s = 7.0e10 : f64} {
  sa.buffer @a : onchip f32 [8] offset 0
  // expected-error @+1 {{'sa.matmul' op uses MXU 2 of 2}}
  %0 = sa.matmul mxu 2 @a #sa.view<[2] x [2], base 0>, @a #sa.view<[2] x [2], base 0> into @a #sa.view<[2] x [2], base 0>
}

// -----

sa.program @p batch 1 target {mxu_count = 2 : i64, array_rows = 4 : i64, array_cols = 128 : i64, onchip_bytes = 1024 : i64, vector_lanes = 1024 : i64, clock_hz = 9.4e8 : f64, hbm_bytes_per_s = 4.5e11 : f64, ici_bytes_per_s = 7.0e10 : f64} {
  sa.buffer @a : onchip f32 [8] offset 0
  // expected-error @+1 {{'sa.matmul' op weight tile 8x1 exceeds the 4x128 array}}
  %0 = sa.matmul mxu 0 @a #sa.view<[1] x [8], base 0>, @a #sa.view<[8] x [1], base 0> into @a #sa.view<[1] x [1], base 0>
}

// -----

sa.program @p batch 1 target {mxu_count = 2 : i64, array_rows = 128 : i64, array_cols = 128 : i64, onchip_bytes = 1024 : i64, vector_lanes = 1024 : i64, clock_hz = 9.4e8 : f64, hbm_bytes_per_s = 4.5e11 : f64, ici_bytes_per_s = 7.0e10 : f64} {
  sa.buffer @a : onchip f32 [8] offset 0
  sa.buffer @h : hbm f32 [8]
  // expected-error @+1 {{'sa.matmul' op rhs 'h' is not on chip}}
  %0 = sa.matmul mxu 0 @a #sa.view<[2] x [2], base 0>, @h #sa.view<[2] x [2], base 0> into @a #sa.view<[2] x [2], base 0>
}

// -----

sa.program @p batch 1 target {mxu_count = 2 : i64, array_rows = 128 : i64, array_cols = 128 : i64, onchip_bytes = 1024 : i64, vector_lanes = 1024 : i64, clock_hz = 9.4e8 : f64, hbm_bytes_per_s = 4.5e11 : f64, ici_bytes_per_s = 7.0e10 : f64} {
  sa.buffer @a : onchip f32 [8] offset 0
  sa.buffer @o : onchip bf16 [8] offset 64
  // expected-error @+1 {{'sa.matmul' op accumulates into 'o', which is not f32}}
  %0 = sa.matmul mxu 0 @a #sa.view<[2] x [2], base 0>, @a #sa.view<[2] x [2], base 0> into @o #sa.view<[2] x [2], base 0>
}

// -----

sa.program @p batch 1 target {mxu_count = 2 : i64, array_rows = 128 : i64, array_cols = 128 : i64, onchip_bytes = 1024 : i64, vector_lanes = 1024 : i64, clock_hz = 9.4e8 : f64, hbm_bytes_per_s = 4.5e11 : f64, ici_bytes_per_s = 7.0e10 : f64} {
  sa.buffer @a : onchip f32 [8] offset 0
  // expected-error @+1 {{'sa.matmul' op lhs view reaches elements [0, 15] of 'a', which has 8}}
  %0 = sa.matmul mxu 0 @a #sa.view<[4] x [4], base 0, (stride 4, offset 0, bound 4, row [1], col [0]), (stride 1, offset 0, bound 4, row [0], col [1])>, @a #sa.view<[4] x [2], base 0> into @a #sa.view<[4] x [2], base 0>
}

// -----

sa.program @p batch 1 target {mxu_count = 2 : i64, array_rows = 128 : i64, array_cols = 128 : i64, onchip_bytes = 1024 : i64, vector_lanes = 1024 : i64, clock_hz = 9.4e8 : f64, hbm_bytes_per_s = 4.5e11 : f64, ici_bytes_per_s = 7.0e10 : f64} {
  sa.buffer @a : onchip f32 [8] offset 0
  // expected-error @+1 {{'sa.vector' op relu takes 1 sources and 1 destinations}}
  %0 = sa.vector relu (@a[0], @a[0]) -> (@a[0]) rows 2 channels 4
}

// -----

sa.program @p batch 1 target {mxu_count = 2 : i64, array_rows = 128 : i64, array_cols = 128 : i64, onchip_bytes = 1024 : i64, vector_lanes = 1024 : i64, clock_hz = 9.4e8 : f64, hbm_bytes_per_s = 4.5e11 : f64, ici_bytes_per_s = 7.0e10 : f64} {
  sa.buffer @a : onchip f32 [8] offset 0
  // expected-error @+1 {{'sa.vector' op fill has the wrong number of attributes}}
  %0 = sa.vector fill () -> (@a[0]) rows 2 channels 4
}

// -----

sa.program @p batch 1 target {mxu_count = 2 : i64, array_rows = 128 : i64, array_cols = 128 : i64, onchip_bytes = 1024 : i64, vector_lanes = 1024 : i64, clock_hz = 9.4e8 : f64, hbm_bytes_per_s = 4.5e11 : f64, ici_bytes_per_s = 7.0e10 : f64} {
  sa.buffer @a : onchip f32 [8] offset 0
  // expected-error @+1 {{'sa.vector' op pooling paddings must be smaller than the window}}
  %0 = sa.vector max_pool (@a[0]) -> (@a[0]) rows 0 channels 0 iattrs [1, 2, 2, 2, 2, 2, 1, 1, 2, 0, 0, 0]
}

// -----

sa.program @p batch 1 target {mxu_count = 2 : i64, array_rows = 128 : i64, array_cols = 128 : i64, onchip_bytes = 1024 : i64, vector_lanes = 1024 : i64, clock_hz = 9.4e8 : f64, hbm_bytes_per_s = 4.5e11 : f64, ici_bytes_per_s = 7.0e10 : f64} {
  sa.buffer @a : onchip f32 [8] offset 0
  // expected-error @+1 {{'sa.vector' op operand 'a' spans [4, 12) of 8 elements}}
  %0 = sa.vector relu (@a[4]) -> (@a[0]) rows 2 channels 4
}

// -----

sa.program @p batch 1 target {mxu_count = 2 : i64, array_rows = 128 : i64, array_cols = 128 : i64, onchip_bytes = 1024 : i64, vector_lanes = 1024 : i64, clock_hz = 9.4e8 : f64, hbm_bytes_per_s = 4.5e11 : f64, ici_bytes_per_s = 7.0e10 : f64} {
  sa.buffer @a : onchip f32 [8] offset 0
  sa.buffer @h : hbm f32 [8]
  // expected-error @+1 {{'sa.vector' op operand 'h' is not on chip}}
  %0 = sa.vector relu (@h[0]) -> (@a[0]) rows 2 channels 4
}

// -----

sa.program @p batch 1 target {mxu_count = 2 : i64, array_rows = 128 : i64, array_cols = 128 : i64, onchip_bytes = 1024 : i64, vector_lanes = 1024 : i64, clock_hz = 9.4e8 : f64, hbm_bytes_per_s = 4.5e11 : f64, ici_bytes_per_s = 7.0e10 : f64} {
  // expected-error @+1 {{'sa.allreduce' op 'g' does not name a buffer}}
  %0 = sa.allreduce [@g]
}

// -----

sa.program @p batch 1 target {mxu_count = 2 : i64, array_rows = 128 : i64, array_cols = 128 : i64, onchip_bytes = 1024 : i64, vector_lanes = 1024 : i64, clock_hz = 9.4e8 : f64, hbm_bytes_per_s = 4.5e11 : f64, ici_bytes_per_s = 7.0e10 : f64} {
  sa.buffer @a : onchip f32 [8] offset 0
  // expected-error @+1 {{view dimensions must be positive}}
  %0 = sa.vector relu (@a[0]) -> (@a[0]) rows 2 channels 4 {v = #sa.view<[0] x [1], base 0>}
}

// -----

sa.program @p batch 1 target {mxu_count = 2 : i64, array_rows = 128 : i64, array_cols = 128 : i64, onchip_bytes = 1024 : i64, vector_lanes = 1024 : i64, clock_hz = 9.4e8 : f64, hbm_bytes_per_s = 4.5e11 : f64, ici_bytes_per_s = 7.0e10 : f64} {
  sa.buffer @a : onchip f32 [8] offset 0
  // expected-error @+1 {{a coordinate needs one coefficient per row and column dimension}}
  %0 = sa.vector relu (@a[0]) -> (@a[0]) rows 2 channels 4 {v = #sa.view<[2] x [1], base 0, (stride 1, offset 0, bound 2, row [1, 0], col [0])>}
}
