// RUN: kiln-opt %s -verify-diagnostics --kiln-optimizer="optimizer=sgd" -o /dev/null

// One parameter read as a batch norm's scale and as a dense bias.
// expected-error @+1 {{'kiln.variable' op is read as a bn parameter and as a bias parameter, so its weight decay and trust ratio exemptions are ambiguous}}
kiln.variable parameter @shared : tensor<3xf32> init ones
kiln.variable state @rm : tensor<3xf32> init zeros
func.func @train_step(%x: tensor<2x3xf32>, %labels: tensor<2xi32>)
    -> (tensor<f32>, tensor<3xf32> {kiln.gradient_of = @shared}) {
  %s = kiln.read @shared : tensor<3xf32>
  %rm = kiln.read @rm : tensor<3xf32>
  %w = arith.constant dense<1.0> : tensor<3x3xf32>
  // expected-note @+1 {{read as bias}}
  %d = kiln.dense %x, %w bias %s : (tensor<2x3xf32>, tensor<3x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  // expected-note @+1 {{read as bn}}
  %y, %m, %v, %nm, %nv = kiln.batch_norm_train %d, %s, %s, %rm, %rm epsilon 1.0e-5 momentum 0.9
      : (tensor<2x3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>)
      -> (tensor<2x3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>)
  %loss = kiln.softmax_cross_entropy %y, %labels : (tensor<2x3xf32>, tensor<2xi32>) -> tensor<f32>
  return %loss, %s : tensor<f32>, tensor<3xf32>
}
