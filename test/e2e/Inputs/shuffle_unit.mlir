// A ShuffleNet-style unit and a VGG-style flatten, through every
// data-movement op: a 32-channel stem split into two 16-channel slices (one
// convolved), concatenated and shuffled (vector loops: channel counts and
// offsets in 16s), a slice of 20 channels from offset 4 and a concat at
// offset 12 (scalar loops), a max pool and a flatten in NCHW order (a
// transpose before the reshape).
module @shuffle_unit {
  kiln.variable parameter @stem.weight : tensor<3x3x3x32xf32> init he_normal
  kiln.variable parameter @stem.bn.weight : tensor<32xf32> init ones
  kiln.variable parameter @stem.bn.bias : tensor<32xf32> init zeros
  kiln.variable state @stem.bn.running_mean : tensor<32xf32> init zeros
  kiln.variable state @stem.bn.running_var : tensor<32xf32> init ones
  kiln.variable parameter @branch.weight : tensor<1x1x16x16xf32> init he_normal
  kiln.variable parameter @branch.bn.weight : tensor<16xf32> init ones
  kiln.variable parameter @branch.bn.bias : tensor<16xf32> init zeros
  kiln.variable state @branch.bn.running_mean : tensor<16xf32> init zeros
  kiln.variable state @branch.bn.running_var : tensor<16xf32> init ones
  kiln.variable parameter @mix.weight : tensor<1x1x20x12xf32> init he_normal
  kiln.variable parameter @fc.weight : tensor<512x5xf32> init normal std 1.000000e-02
  kiln.variable parameter @fc.bias : tensor<5xf32> init zeros
  func.func @forward(%images: tensor<?x8x8x3xf32>, %labels: tensor<?xi32>) -> (tensor<f32>, tensor<?x5xf32>) {
    %w1 = kiln.read @stem.weight : tensor<3x3x3x32xf32>
    %c1 = kiln.conv2d %images, %w1 stride [1, 1] pad [1, 1, 1, 1] : (tensor<?x8x8x3xf32>, tensor<3x3x3x32xf32>) -> tensor<?x8x8x32xf32>
    %g1 = kiln.read @stem.bn.weight : tensor<32xf32>
    %b1 = kiln.read @stem.bn.bias : tensor<32xf32>
    %m1 = kiln.read @stem.bn.running_mean : tensor<32xf32>
    %v1 = kiln.read @stem.bn.running_var : tensor<32xf32>
    %y1, %bm1, %bv1, %nm1, %nv1 = kiln.batch_norm_train %c1, %g1, %b1, %m1, %v1 epsilon 1.000000e-05 momentum 0.899999976 : (tensor<?x8x8x32xf32>, tensor<32xf32>, tensor<32xf32>, tensor<32xf32>, tensor<32xf32>) -> (tensor<?x8x8x32xf32>, tensor<32xf32>, tensor<32xf32>, tensor<32xf32>, tensor<32xf32>)
    kiln.assign @stem.bn.running_mean, %nm1 : tensor<32xf32>
    kiln.assign @stem.bn.running_var, %nv1 : tensor<32xf32>
    %r1 = kiln.relu %y1 : tensor<?x8x8x32xf32>
    %a = kiln.slice %r1 axis 3 start 0 size 16 : (tensor<?x8x8x32xf32>) -> tensor<?x8x8x16xf32>
    %b = kiln.slice %r1 axis 3 start 16 size 16 : (tensor<?x8x8x32xf32>) -> tensor<?x8x8x16xf32>
    %w2 = kiln.read @branch.weight : tensor<1x1x16x16xf32>
    %c2 = kiln.conv2d %b, %w2 stride [1, 1] pad [0, 0, 0, 0] : (tensor<?x8x8x16xf32>, tensor<1x1x16x16xf32>) -> tensor<?x8x8x16xf32>
    %g2 = kiln.read @branch.bn.weight : tensor<16xf32>
    %b2 = kiln.read @branch.bn.bias : tensor<16xf32>
    %m2 = kiln.read @branch.bn.running_mean : tensor<16xf32>
    %v2 = kiln.read @branch.bn.running_var : tensor<16xf32>
    %y2, %bm2, %bv2, %nm2, %nv2 = kiln.batch_norm_train %c2, %g2, %b2, %m2, %v2 epsilon 1.000000e-05 momentum 0.899999976 : (tensor<?x8x8x16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) -> (tensor<?x8x8x16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>)
    kiln.assign @branch.bn.running_mean, %nm2 : tensor<16xf32>
    kiln.assign @branch.bn.running_var, %nv2 : tensor<16xf32>
    %r2 = kiln.relu %y2 : tensor<?x8x8x16xf32>
    %cat = kiln.concat %a, %r2 axis 3 : (tensor<?x8x8x16xf32>, tensor<?x8x8x16xf32>) -> tensor<?x8x8x32xf32>
    %sh = kiln.channel_shuffle %cat groups 2 : tensor<?x8x8x32xf32>
    %s3 = kiln.slice %sh axis 3 start 4 size 20 : (tensor<?x8x8x32xf32>) -> tensor<?x8x8x20xf32>
    %w3 = kiln.read @mix.weight : tensor<1x1x20x12xf32>
    %c3 = kiln.conv2d %s3, %w3 stride [1, 1] pad [0, 0, 0, 0] : (tensor<?x8x8x20xf32>, tensor<1x1x20x12xf32>) -> tensor<?x8x8x12xf32>
    %r3 = kiln.activation silu %c3 : tensor<?x8x8x12xf32>
    %cat2 = kiln.concat %r3, %s3 axis 3 : (tensor<?x8x8x12xf32>, tensor<?x8x8x20xf32>) -> tensor<?x8x8x32xf32>
    %p = kiln.max_pool %cat2 window [2, 2] stride [2, 2] pad [0, 0, 0, 0] : (tensor<?x8x8x32xf32>) -> tensor<?x4x4x32xf32>
    %t = kiln.transpose %p permutation [0, 3, 1, 2] : (tensor<?x4x4x32xf32>) -> tensor<?x32x4x4xf32>
    %f = kiln.reshape %t : tensor<?x32x4x4xf32> to tensor<?x512xf32>
    %fw = kiln.read @fc.weight : tensor<512x5xf32>
    %fb = kiln.read @fc.bias : tensor<5xf32>
    %logits = kiln.dense %f, %fw bias %fb : (tensor<?x512xf32>, tensor<512x5xf32>, tensor<5xf32>) -> tensor<?x5xf32>
    %loss = kiln.softmax_cross_entropy %logits, %labels : (tensor<?x5xf32>, tensor<?xi32>) -> tensor<f32>
    return %loss, %logits : tensor<f32>, tensor<?x5xf32>
  }
}
