// One SGD step (Nesterov, weight decay, bias not decayed) and one LARS step
// (the bias skips the trust ratio and decay) on a tiny model equal an
// independent double-precision calculation to 1e-6.
// RUN: rm -rf %t && mkdir -p %t/sgd %t/lars
// RUN: %python %S/Inputs/optimizer_reference.py write %t/sgd 0.1
// RUN: kiln-opt %s --kiln-autodiff "--kiln-optimizer=optimizer=sgd nesterov=true momentum=0.9 weight-decay=0.01 lr=0.1" -o %t/sgd/step.mlir
// RUN: kiln-run %t/sgd/step.mlir --load=%t/sgd/weights.safetensors --inputs=%t/sgd/inputs.safetensors --save=%t/sgd/after.safetensors
// RUN: %python %S/Inputs/optimizer_reference.py check %t/sgd %t/sgd/after.safetensors sgd | FileCheck %s
// RUN: %python %S/Inputs/optimizer_reference.py write %t/lars 0.5
// RUN: kiln-opt %s --kiln-autodiff "--kiln-optimizer=optimizer=lars momentum=0.9 weight-decay=0.01 lars-eta=0.001 lars-epsilon=1e-5 lr=0.5" -o %t/lars/step.mlir
// RUN: kiln-run %t/lars/step.mlir --load=%t/lars/weights.safetensors --inputs=%t/lars/inputs.safetensors --save=%t/lars/after.safetensors
// RUN: %python %S/Inputs/optimizer_reference.py check %t/lars %t/lars/after.safetensors lars | FileCheck %s
// Negative case: the check notices a wrong optimizer.
// RUN: not %python %S/Inputs/optimizer_reference.py check %t/lars %t/sgd/after.safetensors lars | FileCheck %s --check-prefix=WRONG
// kiln-run executes a kiln.fused_sgd_update (--kiln-fuse; every parameter
// decayed so that both updates share their hyperparameters) to the bit as
// the updates it replaces.
// RUN: kiln-opt %s --kiln-autodiff "--kiln-optimizer=optimizer=sgd nesterov=true momentum=0.9 weight-decay=0.01 no-decay=none lr=0.1" -o %t/sgd/step-1d.mlir
// RUN: kiln-opt %t/sgd/step-1d.mlir --pass-pipeline="builtin.module(func.func(kiln-fuse))" -o %t/sgd/fused.mlir
// RUN: FileCheck %s --check-prefix=FUSED --input-file=%t/sgd/fused.mlir
// RUN: kiln-run %t/sgd/step-1d.mlir --load=%t/sgd/weights.safetensors --inputs=%t/sgd/inputs.safetensors --save=%t/sgd/unfused-after.safetensors
// RUN: kiln-run %t/sgd/fused.mlir --load=%t/sgd/weights.safetensors --inputs=%t/sgd/inputs.safetensors --save=%t/sgd/fused-after.safetensors
// RUN: cmp %t/sgd/unfused-after.safetensors %t/sgd/fused-after.safetensors
// CHECK: MATCH
// WRONG: MISMATCH
// FUSED: kiln.fused_sgd_update
// FUSED-NOT: kiln.sgd_update
kiln.variable parameter @w : tensor<3x2xf32> init he_normal
kiln.variable parameter @b : tensor<2xf32> init zeros
func.func @forward(%x: tensor<2x3xf32>, %labels: tensor<2xi32>) -> tensor<f32> {
  %w = kiln.read @w : tensor<3x2xf32>
  %b = kiln.read @b : tensor<2xf32>
  %y = kiln.dense %x, %w bias %b : (tensor<2x3xf32>, tensor<3x2xf32>, tensor<2xf32>) -> tensor<2x2xf32>
  %l = kiln.softmax_cross_entropy %y, %labels : (tensor<2x2xf32>, tensor<2xi32>) -> tensor<f32>
  return %l : tensor<f32>
}
