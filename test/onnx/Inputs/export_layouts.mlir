// The layouts of test/onnx/export-kiln-ir.test: a transpose that is not the
// importer's, reshapes to and from rank 4, a non-splat constant operand,
// SiLU, and random initializers (their values are the seed's).
module @layouts {
  kiln.variable parameter @conv.weight : tensor<1x1x3x4xf32> init he_normal
  kiln.variable parameter @fc.weight : tensor<16x5xf32> init normal std 0.5
  kiln.variable parameter @fc.bias : tensor<5xf32> init zeros
  func.func @forward(%images: tensor<?x2x2x3xf32>, %labels: tensor<?xi32>) -> (tensor<f32>, tensor<?x5xf32>) {
    %t = kiln.transpose %images permutation [0, 2, 1, 3] : (tensor<?x2x2x3xf32>) -> tensor<?x2x2x3xf32>
    %f = kiln.reshape %t : tensor<?x2x2x3xf32> to tensor<?x12xf32>
    %s = kiln.reshape %f : tensor<?x12xf32> to tensor<?x3x1x4xf32>
    %r = kiln.reshape %s : tensor<?x3x1x4xf32> to tensor<?x2x2x3xf32>
    %k = arith.constant dense<[[[[1.0, 2.0, 3.0]]]]> : tensor<1x1x1x3xf32>
    %m = kiln.broadcast_binary mul %r, %k : (tensor<?x2x2x3xf32>, tensor<1x1x1x3xf32>) -> tensor<?x2x2x3xf32>
    %w = kiln.read @conv.weight : tensor<1x1x3x4xf32>
    %c = kiln.conv2d %m, %w stride [1, 1] pad [0, 0, 0, 0] : (tensor<?x2x2x3xf32>, tensor<1x1x3x4xf32>) -> tensor<?x2x2x4xf32>
    %a = kiln.activation silu %c : tensor<?x2x2x4xf32>
    %x = kiln.reshape %a : tensor<?x2x2x4xf32> to tensor<?x16xf32>
    %fw = kiln.read @fc.weight : tensor<16x5xf32>
    %fb = kiln.read @fc.bias : tensor<5xf32>
    %logits = kiln.dense %x, %fw bias %fb : (tensor<?x16xf32>, tensor<16x5xf32>, tensor<5xf32>) -> tensor<?x5xf32>
    %loss = kiln.softmax_cross_entropy %logits, %labels : (tensor<?x5xf32>, tensor<?xi32>) -> tensor<f32>
    return %loss, %logits : tensor<f32>, tensor<?x5xf32>
  }
}
