// RUN: rm -rf %t && split-file %s %t
// RUN: kiln-translate --export-sa-program %t/pair.mlir -o %t/pair.ksap
// RUN: kiln-sim %t/pair.ksap --report=none --json=%t/pair.json
// RUN: %python -c "import json; ops = json.load(open('%t/pair.json'))['ops']; print([(o['kind'], o['instructions']) for o in ops])" | FileCheck %s
// RUN: not kiln-translate --export-sa-program %t/bad.mlir -o /dev/null 2>&1 | FileCheck %s --check-prefix=BAD

// Two interleaved ops (kiln-convert-to-sa's interleave): their markers come
// first, and an instruction of the first op after the second marker names
// it with `sa.op`, so the report counts each instruction under its own op.
// CHECK: [('fill_a', 2), ('fill_b', 1)]

// Negative case: `sa.op` must name an earlier marker.
// BAD: error: sa.op 3 names no earlier sa.source

//--- pair.mlir
sa.program @pair batch 1 target {name = "tpuv3", mxu_count = 2 : i64, array_rows = 128 : i64, array_cols = 128 : i64, clock_hz = 9.4e8 : f64, onchip_bytes = 16777216 : i64, hbm_bytes_per_s = 4.5e11 : f64, vector_lanes = 1024 : i64, vector_latency = 16 : i64, dma_latency = 500 : i64, dma_overhead = 32 : i64, ici_bytes_per_s = 7.0e10 : f64} {
  sa.buffer @a : onchip f32 [64] offset 0
  sa.buffer @b : onchip f32 [64] offset 256
  sa.source "fill_a" "l0"
  sa.source "fill_b" "l1"
  %0 = sa.vector fill () -> (@a[0]) rows 1 channels 32 fattrs [1.0] {sa.op = 0 : i64}
  %1 = sa.vector fill () -> (@b[0]) rows 1 channels 64 fattrs [2.0]
  %2 = sa.vector fill () -> (@a[32]) rows 1 channels 32 fattrs [1.0] {sa.op = 0 : i64}
}

//--- bad.mlir
sa.program @bad batch 1 target {name = "tpuv3", mxu_count = 2 : i64, array_rows = 128 : i64, array_cols = 128 : i64, clock_hz = 9.4e8 : f64, onchip_bytes = 16777216 : i64, hbm_bytes_per_s = 4.5e11 : f64, vector_lanes = 1024 : i64, vector_latency = 16 : i64, dma_latency = 500 : i64, dma_overhead = 32 : i64, ici_bytes_per_s = 7.0e10 : f64} {
  sa.buffer @a : onchip f32 [64] offset 0
  sa.source "fill_a" "l0"
  %0 = sa.vector fill () -> (@a[0]) rows 1 channels 64 fattrs [1.0] {sa.op = 3 : i64}
}
