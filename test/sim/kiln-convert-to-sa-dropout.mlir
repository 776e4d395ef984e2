// RUN: kiln-opt %s --kiln-convert-to-sa -verify-diagnostics

// Negative case: the systolic target has no generator unit for
// kiln.dropout's masks yet; the error names the op.
module @dropout {
  func.func @train_step(%x: tensor<2x4xf32>, %step: tensor<i64> {kiln.step}) -> tensor<2x4xf32> {
    // expected-error @+1 {{kiln-convert-to-sa: 'kiln.dropout' is not supported on the systolic target}}
    %r = kiln.dropout %x, %step ratio 5.000000e-01 seed 0 stream 0 : tensor<2x4xf32>, tensor<i64>
    return %r : tensor<2x4xf32>
  }
}
