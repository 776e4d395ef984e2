// A small depthwise-separable network (MobileNet's block shape): a stem
// convolution, a depthwise 3x3 with its bias, a pointwise 1x1, a strided
// depthwise convolution with channel multiplier 2, a grouped 1x1 (4 groups)
// with a bias, batch norm and ReLU6: every
// grouped convolution's forward, data and filter gradients run, and the
// biases fold into their convolutions in the compiled step.
module @depthwise_separable {
  kiln.variable parameter @stem.weight : tensor<3x3x3x16xf32> init he_normal
  kiln.variable parameter @dw1.weight : tensor<3x3x1x16xf32> init he_normal
  kiln.variable parameter @dw1.bias : tensor<16xf32> init zeros
  kiln.variable parameter @pw1.weight : tensor<1x1x16x16xf32> init he_normal
  kiln.variable parameter @bn1.weight : tensor<16xf32> init ones
  kiln.variable parameter @bn1.bias : tensor<16xf32> init zeros
  kiln.variable state @bn1.running_mean : tensor<16xf32> init zeros
  kiln.variable state @bn1.running_var : tensor<16xf32> init ones
  kiln.variable parameter @dw2.weight : tensor<3x3x1x32xf32> init he_normal
  kiln.variable parameter @gc.weight : tensor<1x1x8x32xf32> init he_normal
  kiln.variable parameter @gc.bias : tensor<32xf32> init zeros
  kiln.variable parameter @fc.weight : tensor<32x5xf32> init normal std 1.000000e-01
  kiln.variable parameter @fc.bias : tensor<5xf32> init zeros
  func.func @forward(%images: tensor<?x8x8x3xf32>, %labels: tensor<?xi32>) -> (tensor<f32>, tensor<?x5xf32>) {
    %w0 = kiln.read @stem.weight : tensor<3x3x3x16xf32>
    %c0 = kiln.conv2d %images, %w0 stride [1, 1] pad [1, 1, 1, 1] : (tensor<?x8x8x3xf32>, tensor<3x3x3x16xf32>) -> tensor<?x8x8x16xf32>
    %a0 = kiln.activation relu6 %c0 : tensor<?x8x8x16xf32>
    %w1 = kiln.read @dw1.weight : tensor<3x3x1x16xf32>
    %c1 = kiln.conv2d %a0, %w1 stride [1, 1] pad [1, 1, 1, 1] groups 16 : (tensor<?x8x8x16xf32>, tensor<3x3x1x16xf32>) -> tensor<?x8x8x16xf32>
    %b1 = kiln.read @dw1.bias : tensor<16xf32>
    %y1 = kiln.bias_add %c1, %b1 : (tensor<?x8x8x16xf32>, tensor<16xf32>) -> tensor<?x8x8x16xf32>
    %a1 = kiln.activation relu6 %y1 : tensor<?x8x8x16xf32>
    %w2 = kiln.read @pw1.weight : tensor<1x1x16x16xf32>
    %c2 = kiln.conv2d %a1, %w2 stride [1, 1] pad [0, 0, 0, 0] : (tensor<?x8x8x16xf32>, tensor<1x1x16x16xf32>) -> tensor<?x8x8x16xf32>
    %g = kiln.read @bn1.weight : tensor<16xf32>
    %be = kiln.read @bn1.bias : tensor<16xf32>
    %rm = kiln.read @bn1.running_mean : tensor<16xf32>
    %rv = kiln.read @bn1.running_var : tensor<16xf32>
    %n, %bm, %bv, %nm, %nv = kiln.batch_norm_train %c2, %g, %be, %rm, %rv epsilon 1.000000e-05 momentum 0.899999976 : (tensor<?x8x8x16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) -> (tensor<?x8x8x16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>)
    kiln.assign @bn1.running_mean, %nm : tensor<16xf32>
    kiln.assign @bn1.running_var, %nv : tensor<16xf32>
    %a2 = kiln.activation relu6 %n : tensor<?x8x8x16xf32>
    %w3 = kiln.read @dw2.weight : tensor<3x3x1x32xf32>
    %c3 = kiln.conv2d %a2, %w3 stride [2, 2] pad [0, 1, 0, 1] groups 16 : (tensor<?x8x8x16xf32>, tensor<3x3x1x32xf32>) -> tensor<?x4x4x32xf32>
    %a3 = kiln.activation relu6 %c3 : tensor<?x4x4x32xf32>
    %w4 = kiln.read @gc.weight : tensor<1x1x8x32xf32>
    %c4 = kiln.conv2d %a3, %w4 stride [1, 1] pad [0, 0, 0, 0] groups 4 : (tensor<?x4x4x32xf32>, tensor<1x1x8x32xf32>) -> tensor<?x4x4x32xf32>
    %b4 = kiln.read @gc.bias : tensor<32xf32>
    %y4 = kiln.bias_add %c4, %b4 : (tensor<?x4x4x32xf32>, tensor<32xf32>) -> tensor<?x4x4x32xf32>
    %p = kiln.global_avg_pool %y4 : (tensor<?x4x4x32xf32>) -> tensor<?x32xf32>
    %fw = kiln.read @fc.weight : tensor<32x5xf32>
    %d = kiln.dense %p, %fw : (tensor<?x32xf32>, tensor<32x5xf32>) -> tensor<?x5xf32>
    %fb = kiln.read @fc.bias : tensor<5xf32>
    %logits = kiln.bias_add %d, %fb : (tensor<?x5xf32>, tensor<5xf32>) -> tensor<?x5xf32>
    %loss = kiln.softmax_cross_entropy %logits, %labels : (tensor<?x5xf32>, tensor<?xi32>) -> tensor<f32>
    return %loss, %logits : tensor<f32>, tensor<?x5xf32>
  }
}
