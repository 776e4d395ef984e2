// Every verifier message of the data-movement ops (KilnDataMovementOps.cpp).
// RUN: kiln-opt %s -split-input-file -verify-diagnostics

func.func @concat_none() {
  // expected-error @+2 {{kiln.concat: needs at least one input}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = kiln.concat axis 0 : () -> tensor<1xf32>
  return
}

// -----

func.func @concat_axis(%a: tensor<2x3xf32>) {
  // expected-error @+2 {{kiln.concat: axis 2 of a rank-2 tensor}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = kiln.concat %a, %a axis 2 : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  return
}

// -----

func.func @concat_batch(%a: tensor<?x3xf32>) {
  // expected-error @+2 {{kiln.concat: axis 0 is dynamic (the batch)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = kiln.concat %a, %a axis 0 : (tensor<?x3xf32>, tensor<?x3xf32>) -> tensor<?x3xf32>
  return
}

// -----

func.func @concat_element(%a: tensor<2x3xf32>, %b: tensor<2x3xbf16>) {
  // expected-error @+2 {{kiln.concat: input #1 has element type 'bf16', input #0 'f32'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = kiln.concat %a, %b axis 1 : (tensor<2x3xf32>, tensor<2x3xbf16>) -> tensor<2x6xf32>
  return
}

// -----

func.func @concat_rank(%a: tensor<2x3xf32>, %b: tensor<2x3x1xf32>) {
  // expected-error @+2 {{kiln.concat: input #1 has rank 3, input #0 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = kiln.concat %a, %b axis 1 : (tensor<2x3xf32>, tensor<2x3x1xf32>) -> tensor<2x6xf32>
  return
}

// -----

func.func @concat_shape(%a: tensor<?x4x4x8xf32>, %b: tensor<?x2x4x8xf32>) {
  // expected-error @+2 {{kiln.concat: input #1 has shape [?, 2, 4, 8], input #0 [?, 4, 4, 8]; they may differ along axis 3 only}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = kiln.concat %a, %b axis 3 : (tensor<?x4x4x8xf32>, tensor<?x2x4x8xf32>) -> tensor<?x4x4x16xf32>
  return
}

// -----

func.func @concat_result(%a: tensor<2x3xf32>) {
  // expected-error @+2 {{inferred type(s) 'tensor<2x6xf32>' are incompatible with return type(s) of operation 'tensor<2x5xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = kiln.concat %a, %a axis 1 : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x5xf32>
  return
}

// -----

func.func @slice_range(%x: tensor<?x4x4x8xf32>) {
  // expected-error @+2 {{kiln.slice: [4, 10) is not within the 8 elements of the axis}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = kiln.slice %x axis 3 start 4 size 6 : (tensor<?x4x4x8xf32>) -> tensor<?x4x4x6xf32>
  return
}

// -----

func.func @slice_batch(%x: tensor<?x8xf32>) {
  // expected-error @+2 {{kiln.slice: axis 0 is dynamic (the batch)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = kiln.slice %x axis 0 start 0 size 1 : (tensor<?x8xf32>) -> tensor<1x8xf32>
  return
}

// -----

func.func @slice_axis(%x: tensor<2x8xf32>) {
  // expected-error @+2 {{kiln.slice: axis 2 of a rank-2 tensor}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = kiln.slice %x axis 2 start 0 size 1 : (tensor<2x8xf32>) -> tensor<2x8xf32>
  return
}

// -----

func.func @slice_size(%x: tensor<2x8xf32>) {
  // expected-error @+1 {{attribute 'size' failed to satisfy constraint: 64-bit signless integer attribute whose value is positive}}
  %0 = kiln.slice %x axis 1 start 0 size 0 : (tensor<2x8xf32>) -> tensor<2x0xf32>
  return
}

// -----

func.func @slice_backward_range(%dy: tensor<?x4x4x8xf32>) {
  // expected-error @+2 {{kiln.slice_backward: [12, 20) is not within the 16 elements of the axis}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = kiln.slice_backward %dy axis 3 start 12 input_size 16 : (tensor<?x4x4x8xf32>) -> tensor<?x4x4x16xf32>
  return
}

// -----

func.func @slice_backward_batch(%dy: tensor<?x8xf32>) {
  // expected-error @+2 {{kiln.slice_backward: axis 0 is dynamic (the batch)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = kiln.slice_backward %dy axis 0 start 0 input_size 4 : (tensor<?x8xf32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @slice_backward_axis(%dy: tensor<2x8xf32>) {
  // expected-error @+2 {{kiln.slice_backward: axis 3 of a rank-2 tensor}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = kiln.slice_backward %dy axis 3 start 0 input_size 4 : (tensor<2x8xf32>) -> tensor<2x8xf32>
  return
}

// -----

func.func @channel_shuffle_groups(%x: tensor<?x4x4x6xf32>) {
  // expected-error @+1 {{'kiln.channel_shuffle' op cannot split 6 channels into 4 equal groups}}
  %0 = kiln.channel_shuffle %x groups 4 : tensor<?x4x4x6xf32>
  return
}

// -----

func.func @channel_shuffle_rank(%x: tensor<4x6xf32>) {
  // expected-error @+1 {{'kiln.channel_shuffle' op operand #0 must be 4D tensor of 32-bit float or bfloat16 type values}}
  %0 = kiln.channel_shuffle %x groups 2 : tensor<4x6xf32>
  return
}

// -----

func.func @transpose_permutation(%x: tensor<?x7x7x8xf32>) {
  // expected-error @+2 {{kiln.transpose: [0, 3, 1, 1] is not a permutation of the 4 dimensions}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = kiln.transpose %x permutation [0, 3, 1, 1] : (tensor<?x7x7x8xf32>) -> tensor<?x8x7x7xf32>
  return
}

// -----

func.func @transpose_rank(%x: tensor<?x7x7x8xf32>) {
  // expected-error @+2 {{kiln.transpose: [0, 2, 1] is not a permutation of the 4 dimensions}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = kiln.transpose %x permutation [0, 2, 1] : (tensor<?x7x7x8xf32>) -> tensor<?x7x7x8xf32>
  return
}
