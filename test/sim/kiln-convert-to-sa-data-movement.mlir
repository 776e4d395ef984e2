// RUN: kiln-opt %s -split-input-file --kiln-convert-to-sa -verify-diagnostics

// Negative cases: the systolic target has no data-movement unit for the
// concat, slice, channel-shuffle and transpose ops yet; the error names
// the op.
module @concat {
  func.func @train_step(%x: tensor<2x4xf32>) -> tensor<2x8xf32> {
    // expected-error @+1 {{kiln-convert-to-sa: 'kiln.concat' is not supported on the systolic target}}
    %r = kiln.concat %x, %x axis 1 : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x8xf32>
    return %r : tensor<2x8xf32>
  }
}

// -----

module @slice {
  func.func @train_step(%x: tensor<2x4xf32>) -> tensor<2x2xf32> {
    // expected-error @+1 {{kiln-convert-to-sa: 'kiln.slice' is not supported on the systolic target}}
    %r = kiln.slice %x axis 1 start 2 size 2 : (tensor<2x4xf32>) -> tensor<2x2xf32>
    return %r : tensor<2x2xf32>
  }
}

// -----

module @slice_backward {
  func.func @train_step(%x: tensor<2x2xf32>) -> tensor<2x4xf32> {
    // expected-error @+1 {{kiln-convert-to-sa: 'kiln.slice_backward' is not supported on the systolic target}}
    %r = kiln.slice_backward %x axis 1 start 2 input_size 4 : (tensor<2x2xf32>) -> tensor<2x4xf32>
    return %r : tensor<2x4xf32>
  }
}

// -----

module @channel_shuffle {
  func.func @train_step(%x: tensor<2x2x2x4xf32>) -> tensor<2x2x2x4xf32> {
    // expected-error @+1 {{kiln-convert-to-sa: 'kiln.channel_shuffle' is not supported on the systolic target}}
    %r = kiln.channel_shuffle %x groups 2 : tensor<2x2x2x4xf32>
    return %r : tensor<2x2x2x4xf32>
  }
}

// -----

module @transpose {
  func.func @train_step(%x: tensor<2x2x2x4xf32>) -> tensor<2x4x2x2xf32> {
    // expected-error @+1 {{kiln-convert-to-sa: 'kiln.transpose' is not supported on the systolic target}}
    %r = kiln.transpose %x permutation [0, 3, 1, 2] : (tensor<2x2x2x4xf32>) -> tensor<2x4x2x2xf32>
    return %r : tensor<2x4x2x2xf32>
  }
}
