// RUN: not kiln-translate --export-sa-program --split-input-file %s -o /dev/null 2>&1 | FileCheck %s

// The loader's checks run at export, naming the problem.
// CHECK: :[[# @LINE + 1]]:1: error: kiln-export-sa-program: the systolic program does not verify: on-chip buffers 'b' and 'a' share memory while both are live
sa.program @overlap batch 1 target {name = "tpuv3", mxu_count = 2 : i64, array_rows = 128 : i64, array_cols = 128 : i64, clock_hz = 9.4e8 : f64, onchip_bytes = 16777216 : i64, hbm_bytes_per_s = 4.5e11 : f64, vector_lanes = 1024 : i64, vector_latency = 16 : i64, dma_latency = 500 : i64, dma_overhead = 32 : i64, ici_bytes_per_s = 7.0e10 : f64} {
  sa.buffer @a : onchip f32 [64] offset 0
  sa.buffer @b : onchip f32 [64] offset 128
  %0 = sa.vector fill () -> (@a[0]) rows 1 channels 64 fattrs [1.0]
  %1 = sa.vector add (@a[0], @a[0]) -> (@b[0]) rows 1 channels 64
}

// -----

// CHECK: error: kiln-export-sa-program: expected one sa.program
module {
}
