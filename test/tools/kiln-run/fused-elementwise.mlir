// kiln-run executes a kiln.fused_elementwise as the chain it replaces, bf16
// rounding after each op included: 1 + 2^-8 casts to 1 before the add, so
// the sum is 2, not 2.0078125. The chain alone and the fused op (built by
// --kiln-fuse) print the same values.
// RUN: kiln-run %s --print-results | FileCheck %s
// RUN: kiln-opt %s --pass-pipeline="builtin.module(func.func(kiln-fuse))" | FileCheck %s --check-prefix=FUSED
// RUN: kiln-opt %s --pass-pipeline="builtin.module(func.func(kiln-fuse))" | kiln-run --print-results | FileCheck %s

// CHECK: result0: tensor<4xf32> = [2, 0, 6, 0]
// CHECK-NEXT: result1: tensor<4xbf16> = [2, -5, 6, -1]
// FUSED: %[[F:.*]]:2 = kiln.fused_elementwise
// FUSED-NOT: kiln.fused_elementwise
// FUSED: return %[[F]]#0, %[[F]]#1
module {
  func.func @forward() -> (tensor<4xf32>, tensor<4xbf16>) {
    %c = arith.constant dense<[1.00390625, -2.5, 3.0, -0.5]> : tensor<4xf32>
    %h = kiln.cast %c : tensor<4xf32> to tensor<4xbf16>
    %s = kiln.add %h, %h : tensor<4xbf16>
    %r = kiln.relu %s : tensor<4xbf16>
    %w = kiln.cast %r : tensor<4xbf16> to tensor<4xf32>
    return %w, %s : tensor<4xf32>, tensor<4xbf16>
  }
}
