// Every verifier message of the ops --kiln-fuse builds.
// RUN: kiln-opt %s -split-input-file -verify-diagnostics

func.func @no_results(%a: tensor<4xf32>) {
  // expected-error @+1 {{needs at least one operand and one result}}
  kiln.fused_elementwise %a : (tensor<4xf32>) -> () {
  ^bb0(%x: tensor<4xf32>):
    kiln.yield
  }
  return
}

// -----

func.func @shapes(%a: tensor<4xf32>, %b: tensor<2x2xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{operands and results must have one shape, got 'tensor<2x2xf32>' and 'tensor<4xf32>'}}
  %r = kiln.fused_elementwise %a, %b : (tensor<4xf32>, tensor<2x2xf32>) -> tensor<4xf32> {
  ^bb0(%x: tensor<4xf32>, %y: tensor<2x2xf32>):
    kiln.yield %x : tensor<4xf32>
  }
  return %r : tensor<4xf32>
}

// -----

func.func @arguments(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{body arguments must have the operands' types}}
  %r = kiln.fused_elementwise %a : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%x: tensor<4xbf16>):
    %c = kiln.cast %x : tensor<4xbf16> to tensor<4xf32>
    kiln.yield %c : tensor<4xf32>
  }
  return %r : tensor<4xf32>
}

// -----

func.func @not_elementwise(%a: tensor<2x1x1x4xf32>) -> tensor<2x1x1x4xf32> {
  // expected-error @+1 {{body may hold only elementwise kiln ops, found kiln.max_pool}}
  %r = kiln.fused_elementwise %a : (tensor<2x1x1x4xf32>) -> tensor<2x1x1x4xf32> {
  ^bb0(%x: tensor<2x1x1x4xf32>):
    %p = kiln.max_pool %x window [1, 1] stride [1, 1] pad [0, 0, 0, 0] : (tensor<2x1x1x4xf32>) -> tensor<2x1x1x4xf32>
    kiln.yield %p : tensor<2x1x1x4xf32>
  }
  return %r : tensor<2x1x1x4xf32>
}

// -----

func.func @yield_types(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{yields 1 values whose types differ from the results'}}
  %r = kiln.fused_elementwise %a : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%x: tensor<4xf32>):
    %c = kiln.cast %x : tensor<4xf32> to tensor<4xbf16>
    kiln.yield %c : tensor<4xbf16>
  }
  return %r : tensor<4xf32>
}

// -----

func.func @yield_outside(%a: tensor<4xf32>) {
  // expected-error @+1 {{expects parent op 'kiln.fused_elementwise'}}
  kiln.yield %a : tensor<4xf32>
}

// -----

func.func @sgd_no_parameters(%lr: tensor<f32>) {
  // expected-error @+1 {{needs at least one parameter}}
  "kiln.fused_sgd_update"(%lr) {momentum = 0.9 : f32, weight_decay = 0.0 : f32} : (tensor<f32>) -> ()
  return
}

// -----

func.func @sgd_types(%w: tensor<4xf32>, %g: tensor<4xbf16>, %lr: tensor<f32>) {
  // expected-error @+1 {{parameter 0: weight, gradient, velocity and results must have one type}}
  %0:2 = "kiln.fused_sgd_update"(%w, %g, %w, %lr) <{resultSegmentSizes = array<i32: 1, 1, 0>}> {momentum = 0.9 : f32, weight_decay = 0.0 : f32} : (tensor<4xf32>, tensor<4xbf16>, tensor<4xf32>, tensor<f32>) -> (tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

func.func @sgd_copy_count(%w: tensor<4xf32>, %u: tensor<8xf32>, %lr: tensor<f32>) {
  // expected-error @+1 {{has 1 copies for 2 parameters: one each, or none}}
  %0:5 = "kiln.fused_sgd_update"(%w, %u, %w, %u, %w, %u, %lr) <{resultSegmentSizes = array<i32: 2, 2, 1>}> {momentum = 0.9 : f32, weight_decay = 0.0 : f32} : (tensor<4xf32>, tensor<8xf32>, tensor<4xf32>, tensor<8xf32>, tensor<4xf32>, tensor<8xf32>, tensor<f32>) -> (tensor<4xf32>, tensor<8xf32>, tensor<4xf32>, tensor<8xf32>, tensor<4xbf16>)
  return
}

// -----

func.func @sgd_copy_shape(%w: tensor<4xf32>, %lr: tensor<f32>) {
  // expected-error @+1 {{parameter 0: the copy's shape differs from the weight's}}
  %0:3 = "kiln.fused_sgd_update"(%w, %w, %w, %lr) <{resultSegmentSizes = array<i32: 1, 1, 1>}> {momentum = 0.9 : f32, weight_decay = 0.0 : f32} : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<f32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<2x2xbf16>)
  return
}

// -----

func.func @fused_conv_types(%x: tensor<2x4x4x8xf32>, %w: tensor<1x1x8x16xbf16>, %g: tensor<16xf32>) -> tensor<2x4x4x16xf32> {
  // expected-error @+1 {{input, filter and output must have one element type}}
  %y = kiln.fused_conv2d_batch_norm %x, %w, %g, %g, %g, %g stride [1, 1] pad [0, 0, 0, 0] epsilon 1.0e-5 : (tensor<2x4x4x8xf32>, tensor<1x1x8x16xbf16>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<2x4x4x16xf32>
  return %y : tensor<2x4x4x16xf32>
}

// -----

func.func @fused_conv_channels(%x: tensor<2x4x4x4xf32>, %w: tensor<1x1x8x16xf32>, %g: tensor<16xf32>) -> tensor<2x4x4x16xf32> {
  // expected-error @+1 {{input has 4 channels but the filter (HWIO) expects 8}}
  %y = kiln.fused_conv2d_batch_norm %x, %w, %g, %g, %g, %g stride [1, 1] pad [0, 0, 0, 0] epsilon 1.0e-5 : (tensor<2x4x4x4xf32>, tensor<1x1x8x16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<2x4x4x16xf32>
  return %y : tensor<2x4x4x16xf32>
}

// -----

func.func @fused_conv_output(%x: tensor<2x4x4x8xf32>, %w: tensor<1x1x8x16xf32>, %g: tensor<16xf32>) -> tensor<2x2x2x16xf32> {
  // expected-error @+1 {{output shape [2, 2, 2, 16] is not the convolution's [2, 4, 4, 16]}}
  %y = kiln.fused_conv2d_batch_norm %x, %w, %g, %g, %g, %g stride [1, 1] pad [0, 0, 0, 0] epsilon 1.0e-5 : (tensor<2x4x4x8xf32>, tensor<1x1x8x16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<2x2x2x16xf32>
  return %y : tensor<2x2x2x16xf32>
}

// -----

func.func @fused_conv_statistics(%x: tensor<2x4x4x8xf32>, %w: tensor<1x1x8x16xf32>, %g: tensor<16xf32>, %m: tensor<8xf32>) -> tensor<2x4x4x16xf32> {
  // expected-error @+1 {{mean}}
  %y = kiln.fused_conv2d_batch_norm %x, %w, %g, %g, %m, %g stride [1, 1] pad [0, 0, 0, 0] epsilon 1.0e-5 : (tensor<2x4x4x8xf32>, tensor<1x1x8x16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<8xf32>, tensor<16xf32>) -> tensor<2x4x4x16xf32>
  return %y : tensor<2x4x4x16xf32>
}

// -----

func.func @fused_conv_residual(%x: tensor<2x4x4x8xf32>, %w: tensor<1x1x8x16xf32>, %g: tensor<16xf32>, %r: tensor<2x4x4x16xbf16>) -> tensor<2x4x4x16xf32> {
  // expected-error @+1 {{residual type 'tensor<2x4x4x16xbf16>' differs from the output type 'tensor<2x4x4x16xf32>'}}
  %y = kiln.fused_conv2d_batch_norm %x, %w, %g, %g, %g, %g residual %r stride [1, 1] pad [0, 0, 0, 0] epsilon 1.0e-5 : (tensor<2x4x4x8xf32>, tensor<1x1x8x16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<2x4x4x16xbf16>) -> tensor<2x4x4x16xf32>
  return %y : tensor<2x4x4x16xf32>
}

// -----

func.func @dense_gradient_types(%x: tensor<2x8xf32>, %dy: tensor<2x4xbf16>) -> (tensor<8x4xf32>, tensor<4xf32>) {
  // expected-error @+1 {{operands and results must have one element type}}
  %dw, %db = kiln.fused_dense_backward_weights %x, %dy : (tensor<2x8xf32>, tensor<2x4xbf16>) -> (tensor<8x4xf32>, tensor<4xf32>)
  return %dw, %db : tensor<8x4xf32>, tensor<4xf32>
}

// -----

func.func @dense_gradient_rows(%x: tensor<3x8xf32>, %dy: tensor<2x4xf32>) -> (tensor<8x4xf32>, tensor<4xf32>) {
  // expected-error @+1 {{input has 3 rows but the output gradient 2}}
  %dw, %db = kiln.fused_dense_backward_weights %x, %dy : (tensor<3x8xf32>, tensor<2x4xf32>) -> (tensor<8x4xf32>, tensor<4xf32>)
  return %dw, %db : tensor<8x4xf32>, tensor<4xf32>
}

// -----

func.func @dense_gradient_shapes(%x: tensor<2x8xf32>, %dy: tensor<2x4xf32>) -> (tensor<4x8xf32>, tensor<4xf32>) {
  // expected-error @+1 {{gradients must be [8, 4] and [4], got 'tensor<4x8xf32>' and 'tensor<4xf32>'}}
  %dw, %db = kiln.fused_dense_backward_weights %x, %dy : (tensor<2x8xf32>, tensor<2x4xf32>) -> (tensor<4x8xf32>, tensor<4xf32>)
  return %dw, %db : tensor<4x8xf32>, tensor<4xf32>
}

// -----

func.func @lars_copy_shape(%w: tensor<4xf32>, %lr: tensor<f32>) {
  // expected-error @+1 {{the copy's shape differs from the weight's}}
  %0:3 = kiln.lars_update %w, %w, %w, %lr momentum 0.9 eta 1.0e-3 weight_decay 0.0 epsilon 0.0 : tensor<4xf32> copy tensor<2x2xbf16>
  return
}

// -----

func.func @conv_train_output_type(%x: tensor<2x4x4x8xf32>, %w: tensor<3x3x8x16xf32>, %c: tensor<16xf32>) {
  // expected-error @+1 {{output type 'tensor<2x4x4x16xbf16>' differs from the convolution output type 'tensor<2x4x4x16xf32>'}}
  %y:6 = kiln.fused_conv2d_batch_norm_train %x, %w, %c, %c, %c, %c stride [1, 1] pad [1, 1, 1, 1] epsilon 1.0e-5 momentum 0.9 : (tensor<2x4x4x8xf32>, tensor<3x3x8x16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) -> (tensor<2x4x4x16xf32>, tensor<2x4x4x16xbf16>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>)
  return
}

// -----

func.func @conv_train_shape(%x: tensor<2x4x4x8xf32>, %w: tensor<3x3x8x16xf32>, %c: tensor<16xf32>) {
  // expected-error @+1 {{convolution output shape [2, 4, 4, 16] is not the convolution's [2, 2, 2, 16]}}
  %y:6 = kiln.fused_conv2d_batch_norm_train %x, %w, %c, %c, %c, %c stride [2, 2] pad [1, 1, 1, 1] epsilon 1.0e-5 momentum 0.9 : (tensor<2x4x4x8xf32>, tensor<3x3x8x16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) -> (tensor<2x4x4x16xf32>, tensor<2x4x4x16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>)
  return
}

// -----

func.func @conv_train_statistics(%x: tensor<2x4x4x8xf32>, %w: tensor<3x3x8x16xf32>, %c: tensor<16xf32>) {
  // expected-error @+1 {{statistics must be typed like the scale, 'tensor<16xf32>'}}
  %y:6 = kiln.fused_conv2d_batch_norm_train %x, %w, %c, %c, %c, %c stride [1, 1] pad [1, 1, 1, 1] epsilon 1.0e-5 momentum 0.9 : (tensor<2x4x4x8xf32>, tensor<3x3x8x16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) -> (tensor<2x4x4x16xf32>, tensor<2x4x4x16xf32>, tensor<8xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>)
  return
}
