// Every verifier message of the kiln dialect. Ops that infer their result
// types report the precise cause, then that inference failed.
// RUN: kiln-opt %s -split-input-file -verify-diagnostics

// expected-error @+1 {{initializer 'he_normal' needs a fan-in: rank >= 2, got rank 1}}
kiln.variable parameter @v : tensor<8xf32> init he_normal

// -----

// expected-error @+1 {{initializer 'normal' needs a float element type, got 'i32'}}
kiln.variable state @v : tensor<8xi32> init normal std 1.0

// -----

// expected-error @+1 {{initializer 'normal' needs 'std'}}
kiln.variable parameter @v : tensor<8x8xf32> init normal

// -----

// expected-error @+1 {{'std' must be positive, got 0}}
kiln.variable parameter @v : tensor<8x8xf32> init normal std 0.0

// -----

// expected-error @+1 {{'std' is only meaningful with initializer 'normal'}}
kiln.variable parameter @v : tensor<8x8xf32> init zeros std 1.0

// -----

// expected-error @+1 {{initializer 'copy' needs 'of', the variable it copies}}
kiln.variable state @v : tensor<8xbf16> init copy

// -----

kiln.variable parameter @w : tensor<8xf32> init zeros
// expected-error @+1 {{a copy is derived state: declare it 'state'}}
kiln.variable parameter @v : tensor<8xbf16> init copy of @w

// -----

kiln.variable parameter @w : tensor<8xf32> init zeros
// expected-error @+1 {{'of' is only meaningful with initializer 'copy'}}
kiln.variable state @v : tensor<8xbf16> init zeros of @w

// -----

// expected-error @+1 {{copies 'w', which is not a kiln.variable}}
kiln.variable state @v : tensor<8xbf16> init copy of @w

// -----

kiln.variable parameter @w : tensor<8xf32> init zeros
kiln.variable state @c : tensor<8xbf16> init copy of @w
// expected-error @+1 {{copies @c, which is itself a copy: copy its source}}
kiln.variable state @v : tensor<8xf32> init copy of @c

// -----

kiln.variable parameter @w : tensor<8xf32> init zeros
// expected-error @+1 {{is 'tensor<4x2xbf16>' but copies @w of type 'tensor<8xf32>': a copy has its source's shape and a float element type}}
kiln.variable state @v : tensor<4x2xbf16> init copy of @w

// -----

// expected-error @+1 {{'type' failed to satisfy constraint: type attribute of statically shaped tensor of any type values}}
kiln.variable parameter @v : tensor<?x8xf32> init zeros

// -----

func.func @variable_in_function() {
  // expected-error @+1 {{expects parent op 'builtin.module'}}
  kiln.variable parameter @v : tensor<8xf32> init zeros
  return
}

// -----

func.func @read_unknown() -> tensor<8xf32> {
  // expected-error @+1 {{'nowhere' does not name a kiln.variable}}
  %0 = kiln.read @nowhere : tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

kiln.variable state @m : tensor<8xf32> init zeros
func.func @read_wrong_type() -> tensor<4xf32> {
  // expected-error @+1 {{reads @m as 'tensor<4xf32>' but it is declared 'tensor<8xf32>'}}
  %0 = kiln.read @m : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

kiln.variable state @m : tensor<8xf32> init zeros
func.func @assign_wrong_type(%v: tensor<8xbf16>) {
  // expected-error @+1 {{assigns @m as 'tensor<8xbf16>' but it is declared 'tensor<8xf32>'}}
  kiln.assign @m, %v : tensor<8xbf16>
  return
}

// -----

func.func @conv_channels(%x: tensor<1x8x8x4xf32>, %w: tensor<3x3x3x8xf32>) {
  // expected-error @+2 {{input has 4 channels but the filter (HWIO) expects 3}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = kiln.conv2d %x, %w stride [1, 1] pad [1, 1, 1, 1] : (tensor<1x8x8x4xf32>, tensor<3x3x3x8xf32>) -> tensor<1x8x8x8xf32>
  return
}

// -----

func.func @conv_element_types(%x: tensor<1x8x8x3xbf16>, %w: tensor<3x3x3x8xf32>) {
  // expected-error @+2 {{input element type 'bf16' differs from filter element type 'f32'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = kiln.conv2d %x, %w stride [1, 1] pad [1, 1, 1, 1] : (tensor<1x8x8x3xbf16>, tensor<3x3x3x8xf32>) -> tensor<1x8x8x8xbf16>
  return
}

// -----

func.func @conv_dynamic_filter(%x: tensor<1x8x8x3xf32>, %w: tensor<3x3x3x?xf32>) {
  // expected-error @+2 {{the filter shape must be static}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = kiln.conv2d %x, %w stride [1, 1] pad [1, 1, 1, 1] : (tensor<1x8x8x3xf32>, tensor<3x3x3x?xf32>) -> tensor<1x8x8x?xf32>
  return
}

// -----

func.func @conv_window_too_large(%x: tensor<1x2x8x3xf32>, %w: tensor<5x5x3x8xf32>) {
  // expected-error @+2 {{window of height 5 does not fit the padded input height 4}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = kiln.conv2d %x, %w stride [1, 1] pad [1, 1, 1, 1] : (tensor<1x2x8x3xf32>, tensor<5x5x3x8xf32>) -> tensor<1x1x1x8xf32>
  return
}

// -----

func.func @conv_wrong_result(%x: tensor<1x8x8x3xf32>, %w: tensor<3x3x3x8xf32>) {
  // expected-error @+2 {{inferred type(s) 'tensor<1x4x4x8xf32>' are incompatible with return type(s) of operation 'tensor<1x8x8x8xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = kiln.conv2d %x, %w stride [2, 2] pad [1, 1, 1, 1] : (tensor<1x8x8x3xf32>, tensor<3x3x3x8xf32>) -> tensor<1x8x8x8xf32>
  return
}

// -----

func.func @conv_zero_stride(%x: tensor<1x8x8x3xf32>, %w: tensor<3x3x3x8xf32>) {
  // expected-error @+1 {{'strides' failed to satisfy constraint}}
  %0 = kiln.conv2d %x, %w stride [0, 1] pad [1, 1, 1, 1] : (tensor<1x8x8x3xf32>, tensor<3x3x3x8xf32>) -> tensor<1x8x8x8xf32>
  return
}

// -----

func.func @conv_three_paddings(%x: tensor<1x8x8x3xf32>, %w: tensor<3x3x3x8xf32>) {
  // expected-error @+1 {{'padding' failed to satisfy constraint}}
  %0 = kiln.conv2d %x, %w stride [1, 1] pad [1, 1, 1] : (tensor<1x8x8x3xf32>, tensor<3x3x3x8xf32>) -> tensor<1x8x8x8xf32>
  return
}

// -----

func.func @conv_rank(%x: tensor<8x8x3xf32>, %w: tensor<3x3x3x8xf32>) {
  // expected-error @+1 {{operand #0 must be 4D tensor of 32-bit float or bfloat16 type values}}
  %0 = kiln.conv2d %x, %w stride [1, 1] pad [1, 1, 1, 1] : (tensor<8x8x3xf32>, tensor<3x3x3x8xf32>) -> tensor<8x8x8xf32>
  return
}

// -----

func.func @bn_rank(%x: tensor<2x4x8xf32>, %g: tensor<8xf32>) {
  // expected-error @+2 {{input must be NHWC (rank 4) or NC (rank 2), got rank 3}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = kiln.batch_norm_inference %x, %g, %g, %g, %g epsilon 1.0e-5 : (tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
  return
}

// -----

func.func @bn_residual_type(%x: tensor<2x4x4x8xf32>, %g: tensor<8xf32>, %r: tensor<2x4x4x8xbf16>) {
  // expected-error @+2 {{kiln.batch_norm_train: residual type 'tensor<2x4x4x8xbf16>' differs from the input type 'tensor<2x4x4x8xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %y, %bm, %bv, %nm, %nv = kiln.batch_norm_train %x, %g, %g, %g, %g residual %r epsilon 1.0e-5 momentum 0.9 : (tensor<2x4x4x8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<2x4x4x8xbf16>) -> (tensor<2x4x4x8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>)
  return
}

// -----

func.func @bn_backward_relu_offset(%x: tensor<2x4x4x8xf32>, %g: tensor<8xf32>, %b: tensor<4xf32>) {
  // expected-error @+2 {{relu_offset has 4 elements but the input has 8 channels}}
  // expected-error @+1 {{failed to infer returned types}}
  %dx, %dg, %db = kiln.batch_norm_backward %x, %x, %g, %g, %g relu_offset %b epsilon 1.0e-5 : (tensor<2x4x4x8xf32>, tensor<2x4x4x8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<4xf32>) -> (tensor<2x4x4x8xf32>, tensor<8xf32>, tensor<8xf32>)
  return
}

// -----

func.func @bn_channels(%x: tensor<2x4x4x8xf32>, %g: tensor<8xf32>, %b: tensor<4xf32>) {
  // expected-error @+2 {{offset has 4 elements but the input has 8 channels}}
  // expected-error @+1 {{failed to infer returned types}}
  %y, %bm, %bv, %nm, %nv = kiln.batch_norm_train %x, %g, %b, %g, %g epsilon 1.0e-5 momentum 0.9 : (tensor<2x4x4x8xf32>, tensor<8xf32>, tensor<4xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<2x4x4x8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>)
  return
}

// -----

func.func @bn_dynamic_channels(%x: tensor<2x?xf32>, %g: tensor<8xf32>) {
  // expected-error @+2 {{the channel dimension must be static}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = kiln.batch_norm_inference %x, %g, %g, %g, %g epsilon 1.0e-5 : (tensor<2x?xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x?xf32>
  return
}

// -----

func.func @bn_epsilon(%x: tensor<2x8xf32>, %g: tensor<8xf32>) {
  // expected-error @+1 {{'epsilon' failed to satisfy constraint: 32-bit float attribute whose value is positive}}
  %0 = kiln.batch_norm_inference %x, %g, %g, %g, %g epsilon 0.0 : (tensor<2x8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
  return
}

// -----

func.func @bn_momentum(%x: tensor<2x8xf32>, %g: tensor<8xf32>) {
  // expected-error @+1 {{'momentum' failed to satisfy constraint: 32-bit float attribute whose value is non-negative}}
  %y, %bm, %bv, %nm, %nv = kiln.batch_norm_train %x, %g, %g, %g, %g epsilon 1.0e-5 momentum -0.1 : (tensor<2x8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<2x8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>)
  return
}

// -----

func.func @pool_padding(%x: tensor<1x8x8x4xf32>) {
  // expected-error @+2 {{padding 2, 2 must be smaller than the window 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = kiln.max_pool %x window [2, 2] stride [1, 1] pad [2, 2, 0, 0] : (tensor<1x8x8x4xf32>) -> tensor<1x11x7x4xf32>
  return
}

// -----

// In ceil mode a 3x3 window with stride 2 takes 4 positions of 8, not 3.
func.func @pool_ceil_mode(%x: tensor<1x8x8x4xf32>) {
  // expected-error @+2 {{'kiln.max_pool' op inferred type(s) 'tensor<1x4x4x4xf32>' are incompatible with return type(s) of operation 'tensor<1x3x3x4xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = kiln.max_pool %x window [3, 3] stride [2, 2] pad [0, 0, 0, 0] ceil_mode : (tensor<1x8x8x4xf32>) -> tensor<1x3x3x4xf32>
  return
}

// -----

func.func @pool_backward_ceil_mode(%dy: tensor<1x3x3x4xf32>) {
  // expected-error @+1 {{the forward op maps 'tensor<1x8x8x4xf32>' to shape [1, 4, 4, 4], but the output gradient is 'tensor<1x3x3x4xf32>'}}
  %0 = kiln.avg_pool_backward %dy window [3, 3] stride [2, 2] pad [0, 0, 0, 0] ceil_mode : (tensor<1x3x3x4xf32>) -> tensor<1x8x8x4xf32>
  return
}

// -----

func.func @pool_window(%x: tensor<1x8x2x4xf32>) {
  // expected-error @+2 {{window of width 3 does not fit the padded input width 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = kiln.avg_pool %x window [3, 3] stride [1, 1] pad [0, 0, 0, 0] : (tensor<1x8x2x4xf32>) -> tensor<1x6x1x4xf32>
  return
}

// -----

func.func @relu_types(%x: tensor<4xf32>) {
  // expected-error @+1 {{requires the same type for all operands and results}}
  %0 = "kiln.relu"(%x) : (tensor<4xf32>) -> tensor<4xbf16>
  return
}

// -----

func.func @dense_features(%x: tensor<?x8xf32>, %w: tensor<6x4xf32>) {
  // expected-error @+2 {{input has 8 features but the weight [K, M] expects K = 6}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = kiln.dense %x, %w : (tensor<?x8xf32>, tensor<6x4xf32>) -> tensor<?x4xf32>
  return
}

// -----

func.func @dense_bias(%x: tensor<?x8xf32>, %w: tensor<8x4xf32>, %b: tensor<5xf32>) {
  // expected-error @+2 {{bias has 5 elements but the layer has 4 outputs}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = kiln.dense %x, %w bias %b : (tensor<?x8xf32>, tensor<8x4xf32>, tensor<5xf32>) -> tensor<?x4xf32>
  return
}

// -----

func.func @dense_element_types(%x: tensor<?x8xbf16>, %w: tensor<8x4xf32>) {
  // expected-error @+2 {{input element type 'bf16' differs from weight element type 'f32'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = kiln.dense %x, %w : (tensor<?x8xbf16>, tensor<8x4xf32>) -> tensor<?x4xbf16>
  return
}

// -----

func.func @dense_dynamic_weight(%x: tensor<?x8xf32>, %w: tensor<8x?xf32>) {
  // expected-error @+2 {{the weight shape must be static}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = kiln.dense %x, %w : (tensor<?x8xf32>, tensor<8x?xf32>) -> tensor<?x?xf32>
  return
}

// -----

func.func @reshape_count(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{cannot reshape 'tensor<2x3xf32>' (6 elements) to 'tensor<7xf32>' (7 elements)}}
  %0 = kiln.reshape %x : tensor<2x3xf32> to tensor<7xf32>
  return
}

// -----

func.func @reshape_element_type(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{cannot change the element type from 'f32' to 'bf16'; use kiln.cast}}
  %0 = kiln.reshape %x : tensor<2x3xf32> to tensor<6xbf16>
  return
}

// -----

func.func @reshape_dynamic(%x: tensor<?x3xf32>) {
  // expected-error @+1 {{only the leading (batch) dimension may be dynamic, and in both types alike}}
  %0 = kiln.reshape %x : tensor<?x3xf32> to tensor<3x?xf32>
  return
}

// -----

func.func @cast_shape(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{all non-scalar operands/results must have the same shape and base type}}
  %0 = kiln.cast %x : tensor<2x3xf32> to tensor<3x2xbf16>
  return
}

// -----

func.func @loss_batch(%l: tensor<4x10xf32>, %y: tensor<3xi32>) {
  // expected-error @+1 {{has 4 rows of logits but 3 labels}}
  %0 = kiln.softmax_cross_entropy %l, %y : (tensor<4x10xf32>, tensor<3xi32>) -> tensor<f32>
  return
}

// -----

func.func @loss_smoothing(%l: tensor<4x10xf32>, %y: tensor<4xi32>) {
  // expected-error @+1 {{label_smoothing must be in [0, 1), got 1}}
  %0 = kiln.softmax_cross_entropy %l, %y label_smoothing 1.0 : (tensor<4x10xf32>, tensor<4xi32>) -> tensor<f32>
  return
}

// -----

func.func @loss_labels(%l: tensor<4x10xf32>, %y: tensor<4xf32>) {
  // expected-error @+1 {{operand #1 must be 1D tensor of 32-bit signless integer values}}
  %0 = kiln.softmax_cross_entropy %l, %y : (tensor<4x10xf32>, tensor<4xf32>) -> tensor<f32>
  return
}

// -----

func.func @activation_kind(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{expected string or keyword containing one of the following enum values for attribute 'kind' [sigmoid, silu, relu6, hard_sigmoid, hard_swish]}}
  %0 = kiln.activation gelu %x : tensor<2x3xf32>
  return
}

// -----

func.func @activation_type(%x: tensor<2x3xi32>) {
  // expected-error @+1 {{operand #0 must be ranked tensor of 32-bit float or bfloat16 type values}}
  %0 = kiln.activation sigmoid %x : tensor<2x3xi32>
  return
}

// -----

func.func @activation_backward_shape(%dy: tensor<2x3xf32>, %x: tensor<3x2xf32>) {
  // expected-error @+1 {{all non-scalar operands/results must have the same shape and base type}}
  %0 = "kiln.activation_backward"(%dy, %x) {kind = 1 : i32} : (tensor<2x3xf32>, tensor<3x2xf32>) -> tensor<2x3xf32>
  return
}

// -----

func.func @broadcast_binary_shape(%x: tensor<2x4x4x8xf32>, %s: tensor<2x1x1x4xf32>) {
  // expected-error @+2 {{kiln.broadcast_binary: [2, 4, 4, 8] and [2, 1, 1, 4] do not broadcast (one rank, each dimension equal or 1)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = kiln.broadcast_binary mul %x, %s : (tensor<2x4x4x8xf32>, tensor<2x1x1x4xf32>) -> tensor<2x4x4x8xf32>
  return
}

// -----

func.func @broadcast_binary_rank(%x: tensor<2x4x4x8xf32>, %s: tensor<2x8xf32>) {
  // expected-error @+2 {{kiln.broadcast_binary: [2, 4, 4, 8] and [2, 8] do not broadcast (one rank, each dimension equal or 1)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = kiln.broadcast_binary add %x, %s : (tensor<2x4x4x8xf32>, tensor<2x8xf32>) -> tensor<2x4x4x8xf32>
  return
}

// -----

func.func @broadcast_binary_type(%x: tensor<2x4x4x8xf32>, %s: tensor<2x1x1x8xbf16>) {
  // expected-error @+2 {{kiln.broadcast_binary: operand element types differ: 'f32' and 'bf16'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = kiln.broadcast_binary div %x, %s : (tensor<2x4x4x8xf32>, tensor<2x1x1x8xbf16>) -> tensor<2x4x4x8xf32>
  return
}

// -----

// Both operands broadcast: the result takes the larger size of each dimension.
func.func @broadcast_binary_result(%a: tensor<2x1x4x8xf32>, %b: tensor<1x4x1x8xf32>) {
  // expected-error @+2 {{'kiln.broadcast_binary' op inferred type(s) 'tensor<2x4x4x8xf32>' are incompatible with return type(s) of operation 'tensor<2x1x4x8xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = kiln.broadcast_binary sub %a, %b : (tensor<2x1x4x8xf32>, tensor<1x4x1x8xf32>) -> tensor<2x1x4x8xf32>
  return
}

// -----

func.func @broadcast_binary_backward_operands(%dy: tensor<2x4x4x8xf32>, %x: tensor<2x4x4x8xf32>, %s: tensor<2x1x1x8xf32>) {
  // expected-error @+1 {{the gradient of mul with respect to rhs reads lhs only}}
  %0 = kiln.broadcast_binary_backward mul wrt rhs %dy lhs %x rhs %s : (tensor<2x4x4x8xf32>, tensor<2x4x4x8xf32>, tensor<2x1x1x8xf32>) -> tensor<2x1x1x8xf32>
  return
}

// -----

func.func @broadcast_binary_backward_add(%dy: tensor<2x4x4x8xf32>, %x: tensor<2x4x4x8xf32>) {
  // expected-error @+1 {{the gradient of add with respect to lhs reads no forward operand}}
  %0 = kiln.broadcast_binary_backward add wrt lhs %dy lhs %x : (tensor<2x4x4x8xf32>, tensor<2x4x4x8xf32>) -> tensor<2x4x4x8xf32>
  return
}

// -----

func.func @broadcast_binary_backward_lhs(%dy: tensor<2x4x4x8xf32>, %x: tensor<2x4x4x4xf32>) {
  // expected-error @+1 {{kiln.broadcast_binary_backward: lhs [2, 4, 4, 4] does not broadcast to [2, 4, 4, 8] (each dimension equal or 1)}}
  %0 = kiln.broadcast_binary_backward mul wrt rhs %dy lhs %x : (tensor<2x4x4x8xf32>, tensor<2x4x4x4xf32>) -> tensor<2x1x1x8xf32>
  return
}

// -----

func.func @broadcast_binary_backward_result(%dy: tensor<2x4x4x8xf32>, %x: tensor<2x4x4x8xf32>) {
  // expected-error @+1 {{kiln.broadcast_binary_backward: the result [2, 1, 2, 8] does not broadcast to [2, 4, 4, 8] (each dimension equal or 1)}}
  %0 = kiln.broadcast_binary_backward mul wrt rhs %dy lhs %x : (tensor<2x4x4x8xf32>, tensor<2x4x4x8xf32>) -> tensor<2x1x2x8xf32>
  return
}

// -----

func.func @broadcast_binary_backward_type(%dy: tensor<2x4x4x8xf32>, %x: tensor<2x4x4x8xf32>, %s: tensor<2x1x1x8xf32>) {
  // expected-error @+1 {{the result must have the type of rhs, 'tensor<2x1x1x8xf32>', not 'tensor<1x1x1x8xf32>'}}
  %0 = kiln.broadcast_binary_backward div wrt rhs %dy lhs %x rhs %s : (tensor<2x4x4x8xf32>, tensor<2x4x4x8xf32>, tensor<2x1x1x8xf32>) -> tensor<1x1x1x8xf32>
  return
}

// -----

func.func @bias_add_channels(%x: tensor<2x4x4x8xf32>, %b: tensor<4xf32>) {
  // expected-error @+2 {{kiln.bias_add: 4 biases for 8 channels}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = kiln.bias_add %x, %b : (tensor<2x4x4x8xf32>, tensor<4xf32>) -> tensor<2x4x4x8xf32>
  return
}

// -----

func.func @bias_add_type(%x: tensor<2x4x4x8xbf16>, %b: tensor<8xf32>) {
  // expected-error @+2 {{kiln.bias_add: bias element type 'f32' differs from 'bf16'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = kiln.bias_add %x, %b : (tensor<2x4x4x8xbf16>, tensor<8xf32>) -> tensor<2x4x4x8xbf16>
  return
}

// -----

func.func @bias_add_rank(%x: tensor<f32>, %b: tensor<1xf32>) {
  // expected-error @+2 {{kiln.bias_add: the input needs a channel dimension}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = kiln.bias_add %x, %b : (tensor<f32>, tensor<1xf32>) -> tensor<f32>
  return
}

// -----

func.func @bias_add_backward_rank(%dy: tensor<f32>) {
  // expected-error @+2 {{kiln.bias_add_backward: the output gradient needs a channel dimension}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = kiln.bias_add_backward %dy : (tensor<f32>) -> tensor<1xf32>
  return
}
