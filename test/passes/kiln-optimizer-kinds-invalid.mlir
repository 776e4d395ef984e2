// Exemption lists, LARS forms and kinds that cannot be applied.
// RUN: not kiln-opt %s --kiln-optimizer="no-decay=bn,beta" 2>&1 | FileCheck %s --check-prefix=KIND
// RUN: not kiln-opt %s --kiln-optimizer="optimizer=lars lars-skip=gamma" 2>&1 | FileCheck %s --check-prefix=SKIP
// RUN: not kiln-opt %s --kiln-optimizer="optimizer=lars lars-form=v0.7" 2>&1 | FileCheck %s --check-prefix=FORM
// RUN: not kiln-opt %s --kiln-optimizer="optimizer=lars weight-decay=1e-4 no-decay=bn,bias lars-skip=bn" 2>&1 | FileCheck %s --check-prefix=TRUST
// Without decay there is nothing for the trust ratio to miss.
// RUN: kiln-opt %s --kiln-optimizer="optimizer=lars no-decay=bn,bias lars-skip=bn" | FileCheck %s --check-prefix=NODECAY
// RUN: not kiln-opt %s --kiln-optimizer="warmup-steps=-0.5" 2>&1 | FileCheck %s --check-prefix=WARMUP
// RUN: not kiln-opt %s --kiln-optimizer="no-decay=bn,beta" 2>&1 | count 1
// KIND: kiln-optimizer: no-decay: unknown parameter kind 'beta' (expected a comma-separated list of bn and bias, or none)
// SKIP: kiln-optimizer: lars-skip: unknown parameter kind 'gamma' (expected a comma-separated list of bn and bias, or none)
// FORM: for the --lars-form option: 'v0.7' is not a valid value (expected tf2 or v0.6)
// TRUST: 'kiln.variable' op is a bias parameter, exempt from weight decay (no-decay) but not from LARS's trust ratio (lars-skip), whose denominator holds the decay; list 'bias' in both or in neither
// NODECAY: kiln.lars_update {{.*}} weight_decay 0.000000e+00 epsilon 0.000000e+00 : tensor<3xf32>
// WARMUP: invalid learning-rate schedule: the learning rate and warmup steps must be non-negative
kiln.variable parameter @fc.weight : tensor<4x3xf32> init he_normal
kiln.variable parameter @fc.bias : tensor<3xf32> init zeros
func.func @train_step(%x: tensor<2x4xf32>, %labels: tensor<2xi32>)
    -> (tensor<f32>, tensor<4x3xf32> {kiln.gradient_of = @fc.weight}, tensor<3xf32> {kiln.gradient_of = @fc.bias}) {
  %fw = kiln.read @fc.weight : tensor<4x3xf32>
  %fb = kiln.read @fc.bias : tensor<3xf32>
  %logits = kiln.dense %x, %fw bias %fb : (tensor<2x4xf32>, tensor<4x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %loss = kiln.softmax_cross_entropy %logits, %labels : (tensor<2x3xf32>, tensor<2xi32>) -> tensor<f32>
  return %loss, %fw, %fb : tensor<f32>, tensor<4x3xf32>, tensor<3xf32>
}
