// RUN: kiln-opt %s -split-input-file --kiln-convert-to-sa -verify-diagnostics

// Negative cases: the systolic planner maps a convolution onto the array as
// one matrix product over all its input channels; grouped and depthwise
// convolutions (forward, data and filter gradients) are refused, naming the
// op and its groups; so is a bias that --kiln-fuse folded in.
module @depthwise {
  func.func @train_step(%x: tensor<2x4x4x8xf32>, %w: tensor<3x3x1x8xf32>) -> tensor<2x4x4x8xf32> {
    // expected-error @+1 {{kiln-convert-to-sa: 'kiln.conv2d' with groups 8 (a grouped or depthwise convolution) is not supported on the systolic target}}
    %y = kiln.conv2d %x, %w stride [1, 1] pad [1, 1, 1, 1] groups 8 : (tensor<2x4x4x8xf32>, tensor<3x3x1x8xf32>) -> tensor<2x4x4x8xf32>
    return %y : tensor<2x4x4x8xf32>
  }
}

// -----

module @grouped_data {
  func.func @train_step(%dy: tensor<2x4x4x8xf32>, %w: tensor<3x3x4x8xf32>) -> tensor<2x4x4x8xf32> {
    // expected-error @+1 {{kiln-convert-to-sa: 'kiln.conv2d_backward_data' with groups 2 (a grouped or depthwise convolution) is not supported on the systolic target}}
    %dx = kiln.conv2d_backward_data %dy, %w stride [1, 1] pad [1, 1, 1, 1] groups 2 : (tensor<2x4x4x8xf32>, tensor<3x3x4x8xf32>) -> tensor<2x4x4x8xf32>
    return %dx : tensor<2x4x4x8xf32>
  }
}

// -----

module @grouped_filter {
  func.func @train_step(%x: tensor<2x4x4x8xf32>, %dy: tensor<2x4x4x8xf32>) -> tensor<3x3x4x8xf32> {
    // expected-error @+1 {{kiln-convert-to-sa: 'kiln.conv2d_backward_filter' with groups 2 (a grouped or depthwise convolution) is not supported on the systolic target}}
    %dw = kiln.conv2d_backward_filter %x, %dy stride [1, 1] pad [1, 1, 1, 1] groups 2 : (tensor<2x4x4x8xf32>, tensor<2x4x4x8xf32>) -> tensor<3x3x4x8xf32>
    return %dw : tensor<3x3x4x8xf32>
  }
}

// -----

module @biased {
  func.func @train_step(%x: tensor<2x4x4x8xf32>, %w: tensor<3x3x8x8xf32>, %b: tensor<8xf32>) -> tensor<2x4x4x8xf32> {
    // expected-error @+1 {{kiln-convert-to-sa: 'kiln.conv2d' with a fused bias is not supported on the systolic target; convert the unfused step}}
    %y = kiln.conv2d %x, %w bias %b stride [1, 1] pad [1, 1, 1, 1] : (tensor<2x4x4x8xf32>, tensor<3x3x8x8xf32>, tensor<8xf32>) -> tensor<2x4x4x8xf32>
    return %y : tensor<2x4x4x8xf32>
  }
}
