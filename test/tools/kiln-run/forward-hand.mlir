// A forward pass computed by hand: x = [[1, 2]], w = [[1, 0, 0], [0, 1, 0]],
// b = [0, 0, 0.5] give logits [1, 2, 0.5]; with label 1 the loss is
// log(e + e^2 + e^0.5) - 2 = log(11.7560592) - 2 = 0.464368784 (0.46436879
// after rounding to f32). The variables come from their constant
// initializers, the inputs from a file.
// RUN: rm -rf %t && mkdir -p %t
// RUN: %python %S/Inputs/reference.py write %t
// RUN: kiln-run %s --inputs=%t/hand-inputs.safetensors --print-results | FileCheck %s

// CHECK: step 0 loss 0.46436879{{$}}
// CHECK-NEXT: result0: tensor<f32> = [0.46436879]
// CHECK-NEXT: result1: tensor<1x3xf32> = [1, 2, 0.5]

module {
  kiln.variable parameter @w : tensor<2x3xf32> init constant value dense<[[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]> : tensor<2x3xf32>
  kiln.variable parameter @b : tensor<3xf32> init constant value dense<[0.0, 0.0, 0.5]> : tensor<3xf32>
  func.func @forward(%x: tensor<?x2xf32>, %labels: tensor<?xi32>) -> (tensor<f32>, tensor<?x3xf32>) {
    %w = kiln.read @w : tensor<2x3xf32>
    %b = kiln.read @b : tensor<3xf32>
    %logits = kiln.dense %x, %w bias %b : (tensor<?x2xf32>, tensor<2x3xf32>, tensor<3xf32>) -> tensor<?x3xf32>
    %loss = kiln.softmax_cross_entropy %logits, %labels : (tensor<?x3xf32>, tensor<?xi32>) -> tensor<f32>
    return %loss, %logits : tensor<f32>, tensor<?x3xf32>
  }
}
