// RUN: kiln-translate --export-sa-program %s -o %t.ksap
// RUN: kiln-opt %s | FileCheck %s
// RUN: kiln-sim %t.ksap --report=json | FileCheck %s --check-prefix=SIM
// RUN: kiln-sim %t.ksap --mode=functional --steps=2 --print-outputs | FileCheck %s --check-prefix=STEP

// The file holds the program kiln-sim runs; its IR parses and verifies.
// CHECK-LABEL: sa.program @export
// CHECK: sa.vector fill

// One 64-element DMA in, a fill and an add on the vector unit, one DMA out.
// SIM: "program": "export"
// SIM: "step": {"batch": 1, "cycles": [[CYCLES:[0-9]+]]
// SIM-SAME: "hbm_bytes_read": 256, "hbm_bytes_written": 256
// SIM-SAME: "instructions": 4
// SIM: "units": [{"name": "mxu0"
// SIM: "ops": [
// SIM-NEXT: {"kind": "add", "layer": "x", "instructions": 4

// The input is zero (never set) + 2.5 everywhere.
// STEP: step 0 result0 [2.5 2.5 2.5 2.5 2.5 2.5 2.5 2.5
// STEP: step 1 result0 [2.5
sa.program @export batch 1 target {name = "tpuv3", mxu_count = 2 : i64, array_rows = 128 : i64, array_cols = 128 : i64, clock_hz = 9.4e8 : f64, onchip_bytes = 16777216 : i64, hbm_bytes_per_s = 4.5e11 : f64, vector_lanes = 1024 : i64, vector_latency = 16 : i64, dma_latency = 500 : i64, dma_overhead = 32 : i64, ici_bytes_per_s = 7.0e10 : f64} {
  sa.buffer @x : hbm f32 [64] role input binding "arg0"
  sa.buffer @y : hbm f32 [64] role output binding "result0"
  sa.buffer @a : onchip f32 [64] offset 0
  sa.buffer @b : onchip f32 [64] offset 256
  sa.source "add" "x"
  %0 = sa.dma @x #sa.view<[1] x [64], base 0, (stride 1, offset 0, bound 64, row [0], col [1])> to @a #sa.view<[1] x [64], base 0, (stride 1, offset 0, bound 64, row [0], col [1])>
  %1 = sa.vector fill () -> (@b[0]) rows 1 channels 64 fattrs [2.5]
  %2 = sa.vector add (@a[0], @b[0]) -> (@b[0]) rows 1 channels 64 after %0
  %3 = sa.dma @b #sa.view<[1] x [64], base 0, (stride 1, offset 0, bound 64, row [0], col [1])> to @y #sa.view<[1] x [64], base 0, (stride 1, offset 0, bound 64, row [0], col [1])> after %2
}
