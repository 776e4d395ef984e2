// A small network with ceil-mode pooling and every kind of
// kiln.broadcast_binary: a 3x3 stride-2 max pool in ceil mode (SqueezeNet's:
// 8x8 to 4x4, 3x3 in floor mode), a squeeze-and-excitation gate on the
// left-hand side of a mul, a per-channel shift (sub), a division by a
// [1, H, W, 1] map, an add of a [1, 1, W, 1] row to the [N, 1, 1, C] pooled
// features (both operands broadcast), and a 3x3 stride-2 average pool in
// ceil mode (4x4 to 2x2, 1x1 in floor mode) whose last window overhangs.
module @ceil_pool_broadcast {
  kiln.variable parameter @conv1.weight : tensor<3x3x3x16xf32> init he_normal
  kiln.variable parameter @se.fc1.weight : tensor<16x4xf32> init he_normal
  kiln.variable parameter @se.fc1.bias : tensor<4xf32> init zeros
  kiln.variable parameter @se.fc2.weight : tensor<4x16xf32> init he_normal
  kiln.variable parameter @se.fc2.bias : tensor<16xf32> init zeros
  kiln.variable parameter @shift : tensor<1x1x1x16xf32> init zeros
  kiln.variable parameter @divisor : tensor<1x4x4x1xf32> init ones
  kiln.variable parameter @row : tensor<1x1x2x1xf32> init zeros
  kiln.variable parameter @fc.weight : tensor<16x5xf32> init normal std 1.000000e-01
  kiln.variable parameter @fc.bias : tensor<5xf32> init zeros
  func.func @forward(%images: tensor<?x8x8x3xf32>, %labels: tensor<?xi32>) -> (tensor<f32>, tensor<?x5xf32>) {
    %w1 = kiln.read @conv1.weight : tensor<3x3x3x16xf32>
    %c1 = kiln.conv2d %images, %w1 stride [1, 1] pad [1, 1, 1, 1] : (tensor<?x8x8x3xf32>, tensor<3x3x3x16xf32>) -> tensor<?x8x8x16xf32>
    %a1 = kiln.relu %c1 : tensor<?x8x8x16xf32>
    %m = kiln.max_pool %a1 window [3, 3] stride [2, 2] pad [0, 0, 0, 0] ceil_mode : (tensor<?x8x8x16xf32>) -> tensor<?x4x4x16xf32>
    %p = kiln.global_avg_pool %m : (tensor<?x4x4x16xf32>) -> tensor<?x16xf32>
    %f1 = kiln.read @se.fc1.weight : tensor<16x4xf32>
    %b1 = kiln.read @se.fc1.bias : tensor<4xf32>
    %h = kiln.dense %p, %f1 bias %b1 : (tensor<?x16xf32>, tensor<16x4xf32>, tensor<4xf32>) -> tensor<?x4xf32>
    %hr = kiln.relu %h : tensor<?x4xf32>
    %f2 = kiln.read @se.fc2.weight : tensor<4x16xf32>
    %b2 = kiln.read @se.fc2.bias : tensor<16xf32>
    %e = kiln.dense %hr, %f2 bias %b2 : (tensor<?x4xf32>, tensor<4x16xf32>, tensor<16xf32>) -> tensor<?x16xf32>
    %g = kiln.activation hard_sigmoid %e : tensor<?x16xf32>
    %s = kiln.reshape %g : tensor<?x16xf32> to tensor<?x1x1x16xf32>
    %se = kiln.broadcast_binary mul %s, %m : (tensor<?x1x1x16xf32>, tensor<?x4x4x16xf32>) -> tensor<?x4x4x16xf32>
    %t = kiln.read @shift : tensor<1x1x1x16xf32>
    %sh = kiln.broadcast_binary sub %se, %t : (tensor<?x4x4x16xf32>, tensor<1x1x1x16xf32>) -> tensor<?x4x4x16xf32>
    %d = kiln.read @divisor : tensor<1x4x4x1xf32>
    %q = kiln.broadcast_binary div %sh, %d : (tensor<?x4x4x16xf32>, tensor<1x4x4x1xf32>) -> tensor<?x4x4x16xf32>
    %a = kiln.avg_pool %q window [3, 3] stride [2, 2] pad [0, 0, 0, 0] ceil_mode : (tensor<?x4x4x16xf32>) -> tensor<?x2x2x16xf32>
    %r = kiln.read @row : tensor<1x1x2x1xf32>
    %s4 = kiln.reshape %p : tensor<?x16xf32> to tensor<?x1x1x16xf32>
    %o = kiln.broadcast_binary add %r, %s4 : (tensor<1x1x2x1xf32>, tensor<?x1x1x16xf32>) -> tensor<?x1x2x16xf32>
    %y = kiln.broadcast_binary add %a, %o : (tensor<?x2x2x16xf32>, tensor<?x1x2x16xf32>) -> tensor<?x2x2x16xf32>
    %y2 = kiln.relu %y : tensor<?x2x2x16xf32>
    %gp = kiln.global_avg_pool %y2 : (tensor<?x2x2x16xf32>) -> tensor<?x16xf32>
    %fw = kiln.read @fc.weight : tensor<16x5xf32>
    %fb = kiln.read @fc.bias : tensor<5xf32>
    %logits = kiln.dense %gp, %fw bias %fb : (tensor<?x16xf32>, tensor<16x5xf32>, tensor<5xf32>) -> tensor<?x5xf32>
    %loss = kiln.softmax_cross_entropy %logits, %labels : (tensor<?x5xf32>, tensor<?xi32>) -> tensor<f32>
    return %loss, %logits : tensor<f32>, tensor<?x5xf32>
  }
}
