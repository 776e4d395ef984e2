// The hand-written step of gradients-data-movement.mlir: a 1x1 convolution
// to 8 channels, channels [2, 8) sliced and shuffled in 2 groups, then a
// dense layer. Its backward shuffles in 3 groups (6 channels / 2) and places
// the slice's gradient at offset 2; the test breaks each in turn.
module {
  kiln.variable parameter @move.conv : tensor<1x1x2x8xf32> init he_normal
  kiln.variable parameter @move.fc : tensor<96x3xf32> init normal std 1.000000e-01
  func.func @forward(%x: tensor<?x4x4x2xf32>, %labels: tensor<?xi32>) -> (tensor<f32>, tensor<?x3xf32>) {
    %w = kiln.read @move.conv : tensor<1x1x2x8xf32>
    %c = kiln.conv2d %x, %w stride [1, 1] pad [0, 0, 0, 0] : (tensor<?x4x4x2xf32>, tensor<1x1x2x8xf32>) -> tensor<?x4x4x8xf32>
    %s = kiln.slice %c axis 3 start 2 size 6 : (tensor<?x4x4x8xf32>) -> tensor<?x4x4x6xf32>
    %sh = kiln.channel_shuffle %s groups 2 : tensor<?x4x4x6xf32>
    %f = kiln.reshape %sh : tensor<?x4x4x6xf32> to tensor<?x96xf32>
    %wf = kiln.read @move.fc : tensor<96x3xf32>
    %l = kiln.dense %f, %wf : (tensor<?x96xf32>, tensor<96x3xf32>) -> tensor<?x3xf32>
    %loss = kiln.softmax_cross_entropy %l, %labels : (tensor<?x3xf32>, tensor<?xi32>) -> tensor<f32>
    return %loss, %l : tensor<f32>, tensor<?x3xf32>
  }
  func.func @train_step(%x: tensor<?x4x4x2xf32>, %labels: tensor<?xi32>) -> (tensor<f32>, tensor<?x3xf32>, tensor<1x1x2x8xf32> {kiln.gradient_of = @move.conv}, tensor<96x3xf32> {kiln.gradient_of = @move.fc}) {
    %w = kiln.read @move.conv : tensor<1x1x2x8xf32>
    %c = kiln.conv2d %x, %w stride [1, 1] pad [0, 0, 0, 0] : (tensor<?x4x4x2xf32>, tensor<1x1x2x8xf32>) -> tensor<?x4x4x8xf32>
    %s = kiln.slice %c axis 3 start 2 size 6 : (tensor<?x4x4x8xf32>) -> tensor<?x4x4x6xf32>
    %sh = kiln.channel_shuffle %s groups 2 : tensor<?x4x4x6xf32>
    %f = kiln.reshape %sh : tensor<?x4x4x6xf32> to tensor<?x96xf32>
    %wf = kiln.read @move.fc : tensor<96x3xf32>
    %l = kiln.dense %f, %wf : (tensor<?x96xf32>, tensor<96x3xf32>) -> tensor<?x3xf32>
    %loss = kiln.softmax_cross_entropy %l, %labels : (tensor<?x3xf32>, tensor<?xi32>) -> tensor<f32>
    %one = arith.constant dense<1.000000e+00> : tensor<f32>
    %dl = kiln.softmax_cross_entropy_backward %one, %l, %labels : (tensor<f32>, tensor<?x3xf32>, tensor<?xi32>) -> tensor<?x3xf32>
    %dwf = kiln.matmul %f, %dl transpose_lhs : (tensor<?x96xf32>, tensor<?x3xf32>) -> tensor<96x3xf32>
    %df = kiln.matmul %dl, %wf transpose_rhs : (tensor<?x3xf32>, tensor<96x3xf32>) -> tensor<?x96xf32>
    %dsh = kiln.reshape %df : tensor<?x96xf32> to tensor<?x4x4x6xf32>
    %ds = kiln.channel_shuffle %dsh groups 3 : tensor<?x4x4x6xf32>
    %dc = kiln.slice_backward %ds axis 3 start 2 input_size 8 : (tensor<?x4x4x6xf32>) -> tensor<?x4x4x8xf32>
    %dw = kiln.conv2d_backward_filter %x, %dc stride [1, 1] pad [0, 0, 0, 0] : (tensor<?x4x4x2xf32>, tensor<?x4x4x8xf32>) -> tensor<1x1x2x8xf32>
    return %loss, %l, %dw, %dwf : tensor<f32>, tensor<?x3xf32>, tensor<1x1x2x8xf32>, tensor<96x3xf32>
  }
}
