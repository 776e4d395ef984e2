// Values typed bf16 are rounded to bf16 (nearest, ties to even) by every op
// that produces one: 1 + 2^-8 ties down to 1, 1 + 3 * 2^-8 ties up to
// 1 + 2^-6 = 1.015625, 65535 rounds to 65536; widening back to f32 is exact.
// RUN: kiln-run %s --print-results | FileCheck %s

// CHECK: result0: tensor<5xbf16> = [1, 1, 1.015625, 65536, 0]
// CHECK-NEXT: result1: tensor<5xf32> = [1, 1, 1.015625, 65536, 0]
// CHECK-NEXT: result2: tensor<2xf64> = [0.10000000000000001, 260]
// CHECK-NEXT: result3: tensor<2xi64> = [-3, 9000000000]
module {
  func.func @forward() -> (tensor<5xbf16>, tensor<5xf32>, tensor<2xf64>, tensor<2xi64>) {
    %c = arith.constant dense<[1.0, 1.00390625, 1.01171875, 65535.0, -2.5]> : tensor<5xf32>
    %b = kiln.cast %c : tensor<5xf32> to tensor<5xbf16>
    %r = kiln.relu %b : tensor<5xbf16>
    %f = kiln.cast %r : tensor<5xbf16> to tensor<5xf32>
    %d = arith.constant dense<[0.1, 260.0]> : tensor<2xf64>
    %i = arith.constant dense<[-3, 9000000000]> : tensor<2xi64>
    return %r, %f, %d, %i : tensor<5xbf16>, tensor<5xf32>, tensor<2xf64>, tensor<2xi64>
  }
}
