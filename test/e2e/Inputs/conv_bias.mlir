// A small network whose convolutions and classifier carry biases
// (kiln.bias_add) with MobileNetV2's ReLU6, without batch norm.
module @conv_bias {
  kiln.variable parameter @conv1.weight : tensor<3x3x3x16xf32> init he_normal
  kiln.variable parameter @conv1.bias : tensor<16xf32> init zeros
  kiln.variable parameter @conv2.weight : tensor<3x3x16x16xf32> init he_normal
  kiln.variable parameter @conv2.bias : tensor<16xf32> init zeros
  kiln.variable parameter @fc.weight : tensor<16x5xf32> init normal std 1.000000e-01
  kiln.variable parameter @fc.bias : tensor<5xf32> init zeros
  func.func @forward(%images: tensor<?x8x8x3xf32>, %labels: tensor<?xi32>) -> (tensor<f32>, tensor<?x5xf32>) {
    %w1 = kiln.read @conv1.weight : tensor<3x3x3x16xf32>
    %c1 = kiln.conv2d %images, %w1 stride [1, 1] pad [1, 1, 1, 1] : (tensor<?x8x8x3xf32>, tensor<3x3x3x16xf32>) -> tensor<?x8x8x16xf32>
    %b1 = kiln.read @conv1.bias : tensor<16xf32>
    %y1 = kiln.bias_add %c1, %b1 : (tensor<?x8x8x16xf32>, tensor<16xf32>) -> tensor<?x8x8x16xf32>
    %a1 = kiln.activation relu6 %y1 : tensor<?x8x8x16xf32>
    %w2 = kiln.read @conv2.weight : tensor<3x3x16x16xf32>
    %c2 = kiln.conv2d %a1, %w2 stride [2, 2] pad [1, 1, 1, 1] : (tensor<?x8x8x16xf32>, tensor<3x3x16x16xf32>) -> tensor<?x4x4x16xf32>
    %b2 = kiln.read @conv2.bias : tensor<16xf32>
    %y2 = kiln.bias_add %c2, %b2 : (tensor<?x4x4x16xf32>, tensor<16xf32>) -> tensor<?x4x4x16xf32>
    %a2 = kiln.activation relu6 %y2 : tensor<?x4x4x16xf32>
    %p = kiln.global_avg_pool %a2 : (tensor<?x4x4x16xf32>) -> tensor<?x16xf32>
    %fw = kiln.read @fc.weight : tensor<16x5xf32>
    %d = kiln.dense %p, %fw : (tensor<?x16xf32>, tensor<16x5xf32>) -> tensor<?x5xf32>
    %fb = kiln.read @fc.bias : tensor<5xf32>
    %logits = kiln.bias_add %d, %fb : (tensor<?x5xf32>, tensor<5xf32>) -> tensor<?x5xf32>
    %loss = kiln.softmax_cross_entropy %logits, %labels : (tensor<?x5xf32>, tensor<?xi32>) -> tensor<f32>
    return %loss, %logits : tensor<f32>, tensor<?x5xf32>
  }
}
