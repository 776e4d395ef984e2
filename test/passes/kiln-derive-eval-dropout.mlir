// RUN: kiln-opt %s --kiln-derive-eval | FileCheck %s
// Negative cases of kiln-dropout.mlir's EVAL: --kiln-derive-eval drops
// only the step argument and only when nothing reads it any more; an unused
// argument that is not the step stays, and so does a step the evaluation
// still returns.
// CHECK-LABEL: func.func @eval_step
// CHECK-SAME: (%[[X:[a-z0-9_]+]]: tensor<8x4xf32>, %[[L:[a-z0-9_]+]]: tensor<8xi32>, %{{[a-z0-9_]+}}: tensor<8x4xf32>, %[[STEP:[a-z0-9_]+]]: tensor<i64> {kiln.step})
// CHECK-NEXT: %[[LOSS:.*]] = kiln.softmax_cross_entropy %[[X]], %[[L]]
// CHECK-NEXT: return %[[LOSS]], %[[X]], %[[STEP]]
func.func @forward(%x: tensor<8x4xf32>, %labels: tensor<8xi32>, %unused: tensor<8x4xf32>, %step: tensor<i64> {kiln.step}) -> (tensor<f32>, tensor<8x4xf32>, tensor<i64>) {
  %d = kiln.dropout %x, %step ratio 5.000000e-01 seed 0 stream 0 : tensor<8x4xf32>, tensor<i64>
  %loss = kiln.softmax_cross_entropy %d, %labels : (tensor<8x4xf32>, tensor<8xi32>) -> tensor<f32>
  return %loss, %d, %step : tensor<f32>, tensor<8x4xf32>, tensor<i64>
}
