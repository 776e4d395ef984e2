// Weight-decay and trust-ratio exemptions go by what a parameter is (the op
// reading it), not by its rank; the LARS form; a fractional warmup.
// RUN: kiln-opt %s -split-input-file --kiln-optimizer="optimizer=sgd weight-decay=5e-5" | FileCheck %s --check-prefix=DEFAULT
// RUN: kiln-opt %s -split-input-file --kiln-optimizer="optimizer=sgd weight-decay=5e-5 no-decay=bn" | FileCheck %s --check-prefix=BN
// RUN: kiln-opt %s -split-input-file --kiln-optimizer="optimizer=sgd weight-decay=5e-5 no-decay=none" | FileCheck %s --check-prefix=NONE
// MLPerf v0.6: the classifier bias is decayed but skips the trust ratio.
// RUN: kiln-opt %s -split-input-file \
// RUN:   --kiln-optimizer="optimizer=lars lars-form=v0.6 weight-decay=1e-4 no-decay=bn lars-skip=bn,bias lars-epsilon=1e-5 schedule=warmup_polynomial_decay lr=31.2 warmup-steps=977.452850341796875 total-steps=2815 end-lr=1e-4" \
// RUN:   | FileCheck %s --check-prefix=V06
// RUN: kiln-opt %s -split-input-file --kiln-optimizer="optimizer=lars weight-decay=1e-4" | FileCheck %s --check-prefix=TF2

// V06: kiln.variable state @kiln.lr_schedule : tensor<5xf64> init constant value dense<[3.120000e+01, 977.45285034179688, 2.815000e+03, 1.000000e-04, 2.000000e+00]>
kiln.variable parameter @conv.weight : tensor<1x1x2x4xf32> init he_normal
kiln.variable parameter @bn.weight : tensor<4xf32> init ones
kiln.variable parameter @bn.bias : tensor<4xf32> init zeros
kiln.variable parameter @fc.weight : tensor<4x3xf32> init he_normal
kiln.variable parameter @fc.bias : tensor<3xf32> init zeros
// A rank-1 parameter that is neither: decayed like any weight.
kiln.variable parameter @scale : tensor<3xf32> init ones
kiln.variable state @bn.running_mean : tensor<4xf32> init zeros
kiln.variable state @bn.running_var : tensor<4xf32> init ones

// DEFAULT-LABEL: func.func @train_step
// DEFAULT: kiln.sgd_update {{.*}} weight_decay 5.000000e-05 : tensor<1x1x2x4xf32>
// DEFAULT: kiln.sgd_update {{.*}} weight_decay 0.000000e+00 : tensor<4xf32>
// DEFAULT: kiln.sgd_update {{.*}} weight_decay 0.000000e+00 : tensor<4xf32>
// DEFAULT: kiln.sgd_update {{.*}} weight_decay 5.000000e-05 : tensor<4x3xf32>
// DEFAULT: kiln.sgd_update {{.*}} weight_decay 0.000000e+00 : tensor<3xf32>
// DEFAULT: kiln.sgd_update {{.*}} weight_decay 5.000000e-05 : tensor<3xf32>
// BN-LABEL: func.func @train_step
// BN: kiln.sgd_update {{.*}} weight_decay 5.000000e-05 : tensor<1x1x2x4xf32>
// BN: kiln.sgd_update {{.*}} weight_decay 0.000000e+00 : tensor<4xf32>
// BN: kiln.sgd_update {{.*}} weight_decay 0.000000e+00 : tensor<4xf32>
// BN: kiln.sgd_update {{.*}} weight_decay 5.000000e-05 : tensor<4x3xf32>
// BN: kiln.sgd_update {{.*}} weight_decay 5.000000e-05 : tensor<3xf32>
// BN: kiln.sgd_update {{.*}} weight_decay 5.000000e-05 : tensor<3xf32>
// NONE-LABEL: func.func @train_step
// NONE-COUNT-6: kiln.sgd_update {{.*}} weight_decay 5.000000e-05 :
// V06-LABEL: func.func @train_step
// V06: kiln.lars_update {{.*}} weight_decay 9.99999974E-5 epsilon 9.99999974E-6 form v0_6 : tensor<1x1x2x4xf32>
// V06: kiln.lars_update {{.*}} weight_decay 0.000000e+00 epsilon 9.99999974E-6 form v0_6 skip_adaptation : tensor<4xf32>
// V06: kiln.lars_update {{.*}} weight_decay 0.000000e+00 epsilon 9.99999974E-6 form v0_6 skip_adaptation : tensor<4xf32>
// V06: kiln.lars_update {{.*}} weight_decay 9.99999974E-5 epsilon 9.99999974E-6 form v0_6 : tensor<4x3xf32>
// V06: kiln.lars_update {{.*}} weight_decay 9.99999974E-5 epsilon 9.99999974E-6 form v0_6 skip_adaptation : tensor<3xf32>
// V06: kiln.lars_update {{.*}} weight_decay 9.99999974E-5 epsilon 9.99999974E-6 form v0_6 : tensor<3xf32>
// The default form is not printed.
// TF2-LABEL: func.func @train_step
// TF2: kiln.lars_update {{.*}} weight_decay 9.99999974E-5 epsilon 0.000000e+00 : tensor<1x1x2x4xf32>
// TF2: kiln.lars_update {{.*}} weight_decay 0.000000e+00 epsilon 0.000000e+00 skip_adaptation : tensor<4xf32>
// TF2: kiln.lars_update {{.*}} weight_decay 0.000000e+00 epsilon 0.000000e+00 skip_adaptation : tensor<4xf32>
// TF2: kiln.lars_update {{.*}} weight_decay 9.99999974E-5 epsilon 0.000000e+00 : tensor<4x3xf32>
// TF2: kiln.lars_update {{.*}} weight_decay 0.000000e+00 epsilon 0.000000e+00 skip_adaptation : tensor<3xf32>
// TF2: kiln.lars_update {{.*}} weight_decay 9.99999974E-5 epsilon 0.000000e+00 : tensor<3xf32>
func.func @train_step(%x: tensor<2x1x1x2xf32>, %labels: tensor<2xi32>)
    -> (tensor<f32>, tensor<1x1x2x4xf32> {kiln.gradient_of = @conv.weight},
        tensor<4xf32> {kiln.gradient_of = @bn.weight}, tensor<4xf32> {kiln.gradient_of = @bn.bias},
        tensor<4x3xf32> {kiln.gradient_of = @fc.weight}, tensor<3xf32> {kiln.gradient_of = @fc.bias},
        tensor<3xf32> {kiln.gradient_of = @scale}) {
  %cw = kiln.read @conv.weight : tensor<1x1x2x4xf32>
  %c = kiln.conv2d %x, %cw stride [1, 1] pad [0, 0, 0, 0] : (tensor<2x1x1x2xf32>, tensor<1x1x2x4xf32>) -> tensor<2x1x1x4xf32>
  %g = kiln.read @bn.weight : tensor<4xf32>
  %b = kiln.read @bn.bias : tensor<4xf32>
  %rm = kiln.read @bn.running_mean : tensor<4xf32>
  %rv = kiln.read @bn.running_var : tensor<4xf32>
  %y, %m, %v, %nm, %nv = kiln.batch_norm_train %c, %g, %b, %rm, %rv epsilon 1.0e-5 momentum 0.9
      : (tensor<2x1x1x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
      -> (tensor<2x1x1x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
  %r = kiln.global_avg_pool %y : (tensor<2x1x1x4xf32>) -> tensor<2x4xf32>
  %fw = kiln.read @fc.weight : tensor<4x3xf32>
  %fb = kiln.read @fc.bias : tensor<3xf32>
  %logits = kiln.dense %r, %fw bias %fb : (tensor<2x4xf32>, tensor<4x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %loss = kiln.softmax_cross_entropy %logits, %labels : (tensor<2x3xf32>, tensor<2xi32>) -> tensor<f32>
  %s = kiln.read @scale : tensor<3xf32>
  %s2 = kiln.add %s, %fb : tensor<3xf32>
  return %loss, %cw, %g, %b, %fw, %s2, %s : tensor<f32>, tensor<1x1x2x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4x3xf32>, tensor<3xf32>, tensor<3xf32>
}
