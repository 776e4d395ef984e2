// Every verifier message of grouped convolutions and the convolution bias.
// RUN: kiln-opt %s -split-input-file -verify-diagnostics

func.func @conv_group_channels(%x: tensor<1x8x8x6xf32>, %w: tensor<3x3x2x8xf32>) {
  // expected-error @+2 {{kiln.conv2d: input has 6 channels but the filter (HWIO) expects 4 (2 per group, 2 groups)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = kiln.conv2d %x, %w stride [1, 1] pad [1, 1, 1, 1] groups 2 : (tensor<1x8x8x6xf32>, tensor<3x3x2x8xf32>) -> tensor<1x8x8x8xf32>
  return
}

// -----

func.func @conv_group_outputs(%x: tensor<1x8x8x8xf32>, %w: tensor<3x3x2x6xf32>) {
  // expected-error @+2 {{kiln.conv2d: the filter (HWIO) has 6 output channels, not a multiple of 4 groups}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = kiln.conv2d %x, %w stride [1, 1] pad [1, 1, 1, 1] groups 4 : (tensor<1x8x8x8xf32>, tensor<3x3x2x6xf32>) -> tensor<1x8x8x6xf32>
  return
}

// -----

func.func @conv_groups_zero(%x: tensor<1x8x8x8xf32>, %w: tensor<3x3x8x8xf32>) {
  // expected-error @+1 {{attribute 'groups' failed to satisfy constraint: 64-bit signless integer attribute whose value is positive}}
  %0 = kiln.conv2d %x, %w stride [1, 1] pad [1, 1, 1, 1] groups 0 : (tensor<1x8x8x8xf32>, tensor<3x3x8x8xf32>) -> tensor<1x8x8x8xf32>
  return
}

// -----

func.func @conv_bias_size(%x: tensor<1x8x8x8xf32>, %w: tensor<3x3x1x8xf32>, %b: tensor<4xf32>) {
  // expected-error @+2 {{kiln.conv2d: bias has 4 elements but the filter has 8 output channels}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = kiln.conv2d %x, %w bias %b stride [1, 1] pad [1, 1, 1, 1] groups 8 : (tensor<1x8x8x8xf32>, tensor<3x3x1x8xf32>, tensor<4xf32>) -> tensor<1x8x8x8xf32>
  return
}

// -----

func.func @conv_bias_type(%x: tensor<1x8x8x8xbf16>, %w: tensor<3x3x1x8xbf16>, %b: tensor<8xbf16>) {
  // expected-error @+1 {{operand #2 must be 1D tensor of 32-bit float values}}
  %0 = kiln.conv2d %x, %w bias %b stride [1, 1] pad [1, 1, 1, 1] groups 8 : (tensor<1x8x8x8xbf16>, tensor<3x3x1x8xbf16>, tensor<8xbf16>) -> tensor<1x8x8x8xbf16>
  return
}

// -----

func.func @data_group_channels(%dy: tensor<1x4x4x8xf32>, %w: tensor<3x3x1x8xf32>) {
  // expected-error @+1 {{kiln.conv2d_backward_data: input gradient has 8 channels but the filter expects 4 (1 per group, 4 groups)}}
  %0 = kiln.conv2d_backward_data %dy, %w stride [1, 1] pad [1, 1, 1, 1] groups 4 : (tensor<1x4x4x8xf32>, tensor<3x3x1x8xf32>) -> tensor<1x4x4x8xf32>
  return
}

// -----

func.func @data_group_outputs(%dy: tensor<1x4x4x6xf32>, %w: tensor<3x3x1x6xf32>) {
  // expected-error @+1 {{kiln.conv2d_backward_data: the filter has 6 output channels, not a multiple of 4 groups}}
  %0 = kiln.conv2d_backward_data %dy, %w stride [1, 1] pad [1, 1, 1, 1] groups 4 : (tensor<1x4x4x6xf32>, tensor<3x3x1x6xf32>) -> tensor<1x4x4x4xf32>
  return
}

// -----

func.func @filter_group_channels(%x: tensor<1x4x4x6xf32>, %dy: tensor<1x4x4x8xf32>) {
  // expected-error @+1 {{kiln.conv2d_backward_filter: input has 6 channels but the filter gradient expects 8 (2 per group, 4 groups)}}
  %0 = kiln.conv2d_backward_filter %x, %dy stride [1, 1] pad [1, 1, 1, 1] groups 4 : (tensor<1x4x4x6xf32>, tensor<1x4x4x8xf32>) -> tensor<3x3x2x8xf32>
  return
}

// -----

func.func @filter_group_outputs(%x: tensor<1x4x4x8xf32>, %dy: tensor<1x4x4x6xf32>) {
  // expected-error @+1 {{kiln.conv2d_backward_filter: the filter gradient has 6 output channels, not a multiple of 4 groups}}
  %0 = kiln.conv2d_backward_filter %x, %dy stride [1, 1] pad [1, 1, 1, 1] groups 4 : (tensor<1x4x4x8xf32>, tensor<1x4x4x6xf32>) -> tensor<3x3x2x6xf32>
  return
}

// -----

func.func @split_blocks_blocked(%x: tensor<1x4x4x32xf32>, %w: tensor<1x1x8x32xf32>) {
  // expected-error @+1 {{cannot compute in nChw16c}}
  %0 = kiln.conv2d %x, %w stride [1, 1] pad [0, 0, 0, 0] groups 4 {kiln.layout = #kiln.layout<nChw16c>} : (tensor<1x4x4x32xf32>, tensor<1x1x8x32xf32>) -> tensor<1x4x4x32xf32>
  return
}
