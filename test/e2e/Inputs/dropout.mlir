// A small network with a dropout on a 4-D activation (16 channels, so that
// --layout=blocked computes it in nChw16c) and one on the pooled features
// before the classifier (where torchvision's classifiers have theirs).
module @dropout {
  kiln.variable parameter @conv1.weight : tensor<3x3x3x16xf32> init he_normal
  kiln.variable parameter @conv2.weight : tensor<3x3x16x16xf32> init he_normal
  kiln.variable parameter @fc.weight : tensor<16x5xf32> init normal std 1.000000e-01
  kiln.variable parameter @fc.bias : tensor<5xf32> init zeros
  func.func @forward(%images: tensor<?x8x8x3xf32>, %labels: tensor<?xi32>, %step: tensor<i64> {kiln.step}) -> (tensor<f32>, tensor<?x5xf32>) {
    %w1 = kiln.read @conv1.weight : tensor<3x3x3x16xf32>
    %c1 = kiln.conv2d %images, %w1 stride [1, 1] pad [1, 1, 1, 1] : (tensor<?x8x8x3xf32>, tensor<3x3x3x16xf32>) -> tensor<?x8x8x16xf32>
    %r1 = kiln.relu %c1 : tensor<?x8x8x16xf32>
    %d1 = kiln.dropout %r1, %step ratio 2.000000e-01 seed 0 stream 0 : tensor<?x8x8x16xf32>, tensor<i64>
    %w2 = kiln.read @conv2.weight : tensor<3x3x16x16xf32>
    %c2 = kiln.conv2d %d1, %w2 stride [2, 2] pad [1, 1, 1, 1] : (tensor<?x8x8x16xf32>, tensor<3x3x16x16xf32>) -> tensor<?x4x4x16xf32>
    %r2 = kiln.relu %c2 : tensor<?x4x4x16xf32>
    %p = kiln.global_avg_pool %r2 : (tensor<?x4x4x16xf32>) -> tensor<?x16xf32>
    %d2 = kiln.dropout %p, %step ratio 5.000000e-01 seed 0 stream 1 : tensor<?x16xf32>, tensor<i64>
    %fw = kiln.read @fc.weight : tensor<16x5xf32>
    %fb = kiln.read @fc.bias : tensor<5xf32>
    %logits = kiln.dense %d2, %fw bias %fb : (tensor<?x16xf32>, tensor<16x5xf32>, tensor<5xf32>) -> tensor<?x5xf32>
    %loss = kiln.softmax_cross_entropy %logits, %labels : (tensor<?x5xf32>, tensor<?xi32>) -> tensor<f32>
    return %loss, %logits : tensor<f32>, tensor<?x5xf32>
  }
}
