// kiln-run's errors name the layer of the op (passes/Analysis/LayerNames.h:
// its parameters' prefix, as the x86 profile and kiln-sim name it): here an
// op after a batch norm's ReLU is in the batch norm's layer, a convolution's
// filter gradient (which reads no variable) in its convolution's layer by
// the location autodiff gave it, and an op on the inputs alone in none.
// RUN: not kiln-run %s -split-input-file --synthetic-inputs --batch=2 2>&1 \
// RUN:   | FileCheck %s

// CHECK: error: 'arith.addf' op (step 0) in layer1.0.bn1: is not supported by kiln-run
module {
  kiln.variable parameter @layer1.0.conv1.weight : tensor<3x3x2x4xf32> init he_normal
  kiln.variable parameter @layer1.0.bn1.weight : tensor<4xf32> init ones
  kiln.variable parameter @layer1.0.bn1.bias : tensor<4xf32> init zeros
  kiln.variable state @layer1.0.bn1.running_mean : tensor<4xf32> init zeros
  kiln.variable state @layer1.0.bn1.running_var : tensor<4xf32> init ones
  func.func @forward(%x: tensor<?x4x4x2xf32>) -> tensor<?x4x4x4xf32> {
    %w = kiln.read @layer1.0.conv1.weight : tensor<3x3x2x4xf32>
    %c = kiln.conv2d %x, %w stride [1, 1] pad [1, 1, 1, 1] : (tensor<?x4x4x2xf32>, tensor<3x3x2x4xf32>) -> tensor<?x4x4x4xf32>
    %g = kiln.read @layer1.0.bn1.weight : tensor<4xf32>
    %b = kiln.read @layer1.0.bn1.bias : tensor<4xf32>
    %m = kiln.read @layer1.0.bn1.running_mean : tensor<4xf32>
    %v = kiln.read @layer1.0.bn1.running_var : tensor<4xf32>
    %y, %bm, %bv, %nm, %nv = kiln.batch_norm_train %c, %g, %b, %m, %v epsilon 1.0e-05 momentum 0.9 : (tensor<?x4x4x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<?x4x4x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
    %r = kiln.relu %y : tensor<?x4x4x4xf32>
    %twice = arith.addf %r, %r : tensor<?x4x4x4xf32>
    return %twice : tensor<?x4x4x4xf32>
  }
}

// -----

// The filter gradient shares its convolution's location (one line here).
// CHECK: error: 'arith.mulf' op (step 0) in stem.conv: is not supported by kiln-run
module {
  kiln.variable parameter @stem.conv.weight : tensor<3x3x2x4xf32> init he_normal
  func.func @forward(%x: tensor<?x4x4x2xf32>, %dy: tensor<?x4x4x4xf32>) -> tensor<3x3x2x4xf32> {
    %w = kiln.read @stem.conv.weight : tensor<3x3x2x4xf32>
    %c = kiln.conv2d %x, %w stride [1, 1] pad [1, 1, 1, 1] : (tensor<?x4x4x2xf32>, tensor<3x3x2x4xf32>) -> tensor<?x4x4x4xf32> loc("model.mlir":7:5)
    %dw = kiln.conv2d_backward_filter %x, %dy stride [1, 1] pad [1, 1, 1, 1] : (tensor<?x4x4x2xf32>, tensor<?x4x4x4xf32>) -> tensor<3x3x2x4xf32> loc("model.mlir":7:5)
    %sq = arith.mulf %dw, %dw : tensor<3x3x2x4xf32>
    return %sq : tensor<3x3x2x4xf32>
  }
}

// -----

// Negative: an op on the step's inputs alone belongs to no layer.
// CHECK: error: 'arith.addf' op (step 0) is not supported by kiln-run
module {
  kiln.variable parameter @fc.weight : tensor<2x3xf32> init he_normal
  func.func @forward(%x: tensor<?x2xf32>) -> tensor<?x2xf32> {
    %twice = arith.addf %x, %x : tensor<?x2xf32>
    return %twice : tensor<?x2xf32>
  }
}
