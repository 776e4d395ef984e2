// Every verifier message of the backward and training ops, and of constant
// variables. Ops that infer their result types report the precise cause,
// then that inference failed.
// RUN: kiln-opt %s -split-input-file -verify-diagnostics

// expected-error @+1 {{initializer 'constant' needs a 'value'}}
kiln.variable state @s : tensor<2xf64> init constant

// -----

// expected-error @+1 {{'value' has type 'tensor<3xf64>' but the variable is 'tensor<2xf64>'}}
kiln.variable state @s : tensor<2xf64> init constant value dense<1.0> : tensor<3xf64>

// -----

// expected-error @+1 {{'value' is only meaningful with initializer 'constant'}}
kiln.variable state @s : tensor<2xf64> init zeros value dense<1.0> : tensor<2xf64>

// -----

func.func @data_channels(%dy: tensor<1x4x4x8xf32>, %w: tensor<3x3x3x8xf32>) {
  // expected-error @+1 {{input gradient has 4 channels but the filter expects 3}}
  %0 = kiln.conv2d_backward_data %dy, %w stride [1, 1] pad [1, 1, 1, 1] : (tensor<1x4x4x8xf32>, tensor<3x3x3x8xf32>) -> tensor<1x4x4x4xf32>
  return
}

// -----

func.func @data_shape(%dy: tensor<1x4x4x8xf32>, %w: tensor<3x3x3x8xf32>) {
  // expected-error @+1 {{the forward op maps 'tensor<1x6x6x3xf32>' to shape [1, 6, 6, 8], but the output gradient is 'tensor<1x4x4x8xf32>'}}
  %0 = kiln.conv2d_backward_data %dy, %w stride [1, 1] pad [1, 1, 1, 1] : (tensor<1x4x4x8xf32>, tensor<3x3x3x8xf32>) -> tensor<1x6x6x3xf32>
  return
}

// -----

func.func @data_types(%dy: tensor<1x4x4x8xbf16>, %w: tensor<3x3x3x8xbf16>) {
  // expected-error @+1 {{gradient element types differ: 'f32' and 'bf16'}}
  %0 = kiln.conv2d_backward_data %dy, %w stride [1, 1] pad [1, 1, 1, 1] : (tensor<1x4x4x8xbf16>, tensor<3x3x3x8xbf16>) -> tensor<1x4x4x3xf32>
  return
}

// -----

func.func @filter_channels(%x: tensor<1x4x4x4xf32>, %dy: tensor<1x4x4x8xf32>) {
  // expected-error @+1 {{input has 4 channels but the filter gradient expects 3}}
  %0 = kiln.conv2d_backward_filter %x, %dy stride [1, 1] pad [1, 1, 1, 1] : (tensor<1x4x4x4xf32>, tensor<1x4x4x8xf32>) -> tensor<3x3x3x8xf32>
  return
}

// -----

func.func @filter_dynamic(%x: tensor<1x4x4x4xf32>, %dy: tensor<1x4x4x8xf32>) {
  // expected-error @+1 {{the filter gradient shape must be static}}
  %0 = kiln.conv2d_backward_filter %x, %dy stride [1, 1] pad [1, 1, 1, 1] : (tensor<1x4x4x4xf32>, tensor<1x4x4x8xf32>) -> tensor<3x3x4x?xf32>
  return
}

// -----

func.func @bn_backward_types(%dy: tensor<2x8xbf16>, %x: tensor<2x8xf32>, %g: tensor<8xf32>) {
  // expected-error @+2 {{the output gradient and the input must have the same type}}
  // expected-error @+1 {{failed to infer returned types}}
  %dx, %dg, %db = kiln.batch_norm_backward %dy, %x, %g, %g, %g epsilon 1.0e-5 : (tensor<2x8xbf16>, tensor<2x8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<2x8xbf16>, tensor<8xf32>, tensor<8xf32>)
  return
}

// -----

func.func @max_pool_backward_type(%dy: tensor<1x2x2x4xf32>, %x: tensor<1x4x4x4xf32>) {
  // expected-error @+1 {{the input gradient must have the input's type 'tensor<1x4x4x4xf32>'}}
  %0 = kiln.max_pool_backward %dy, %x window [2, 2] stride [2, 2] pad [0, 0, 0, 0] : (tensor<1x2x2x4xf32>, tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xbf16>
  return
}

// -----

func.func @avg_pool_backward_shape(%dy: tensor<1x3x3x4xf32>) {
  // expected-error @+1 {{the forward op maps 'tensor<1x4x4x4xf32>' to shape [1, 2, 2, 4], but the output gradient is 'tensor<1x3x3x4xf32>'}}
  %0 = kiln.avg_pool_backward %dy window [2, 2] stride [2, 2] pad [0, 0, 0, 0] : (tensor<1x3x3x4xf32>) -> tensor<1x4x4x4xf32>
  return
}

// -----

func.func @global_pool_backward(%dy: tensor<2x8xf32>) {
  // expected-error @+1 {{pooling 'tensor<2x3x3x4xf32>' gives shape [2, 4], but the output gradient is 'tensor<2x8xf32>'}}
  %0 = kiln.global_avg_pool_backward %dy : (tensor<2x8xf32>) -> tensor<2x3x3x4xf32>
  return
}

// -----

func.func @matmul_types(%a: tensor<2x3xf32>, %b: tensor<3x4xbf16>) {
  // expected-error @+2 {{kiln.matmul: element types differ: 'f32' and 'bf16'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = kiln.matmul %a, %b : (tensor<2x3xf32>, tensor<3x4xbf16>) -> tensor<2x4xf32>
  return
}

// -----

func.func @matmul_contracting(%a: tensor<2x3xf32>, %b: tensor<4x4xf32>) {
  // expected-error @+2 {{kiln.matmul: contracting sizes differ: 2 and 4}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = kiln.matmul %a, %b transpose_lhs : (tensor<2x3xf32>, tensor<4x4xf32>) -> tensor<3x4xf32>
  return
}

// -----

func.func @reduce_scalar(%a: tensor<f32>) {
  // expected-error @+2 {{kiln.reduce_sum: needs rank >= 1}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = kiln.reduce_sum %a : (tensor<f32>) -> tensor<f32>
  return
}

// -----

func.func @loss_backward_type(%d: tensor<f32>, %l: tensor<2x4xf32>, %y: tensor<2xi32>) {
  // expected-error @+1 {{the logits gradient must have the logits' type 'tensor<2x4xf32>'}}
  %0 = kiln.softmax_cross_entropy_backward %d, %l, %y : (tensor<f32>, tensor<2x4xf32>, tensor<2xi32>) -> tensor<2x5xf32>
  return
}

// -----

func.func @loss_backward_labels(%d: tensor<f32>, %l: tensor<2x4xf32>, %y: tensor<3xi32>) {
  // expected-error @+1 {{has 2 rows of logits but 3 labels}}
  %0 = kiln.softmax_cross_entropy_backward %d, %l, %y : (tensor<f32>, tensor<2x4xf32>, tensor<3xi32>) -> tensor<2x4xf32>
  return
}

// -----

func.func @schedule_params(%s: tensor<i64>, %p: tensor<3xf64>) {
  // expected-error @+1 {{schedule 'cosine_decay' needs 5 parameters, got 3}}
  %0 = kiln.learning_rate %s, %p schedule cosine_decay : (tensor<i64>, tensor<3xf64>) -> tensor<f32>
  return
}

// -----

func.func @schedule_boundaries(%s: tensor<i64>, %p: tensor<4xf64>) {
  // expected-error @+1 {{schedule 'step_decay' needs 4 parameters and at least one boundary, got 4}}
  %0 = kiln.learning_rate %s, %p schedule step_decay : (tensor<i64>, tensor<4xf64>) -> tensor<f32>
  return
}

// -----

func.func @sgd_types(%w: tensor<4xf32>, %g: tensor<4xbf16>, %lr: tensor<f32>) {
  // expected-error @+1 {{failed to verify that all of {weight, gradient, velocity, new_weight, new_velocity} have same type}}
  %0:2 = "kiln.sgd_update"(%w, %g, %w, %lr) {momentum = 0.9 : f32, weight_decay = 0.0 : f32} : (tensor<4xf32>, tensor<4xbf16>, tensor<4xf32>, tensor<f32>) -> (tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

func.func @empty_bucket() {
  // expected-error @+2 {{kiln.allreduce: an empty bucket}}
  // expected-error @+1 {{failed to infer returned types}}
  "kiln.allreduce"() {bucket = 0 : i64} : () -> ()
  return
}
