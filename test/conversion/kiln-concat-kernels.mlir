// RUN: kiln-opt %s -split-input-file --kiln-lower-to-linalg --kiln-lower-to-llvm -verify-diagnostics | FileCheck %s

// A dense block's concatenations: each copies every earlier feature map into
// its output, k copies for the k-th. The copies of one concatenation differ
// only in their channel offset, which is a byte shift from the call's table,
// so they share one kernel: one kernel per output width (3 here, not 9), and
// the slices of the gradient side one per width too. This keeps DenseNet's
// kernel count, and so kilnc's LLVM time, linear in its depth.
// CHECK: \22sites\22:[
// CHECK-SAME: {\22function\22:\22train\22,\22kernel\22:\22kiln_kernel_0\22,{{[^}]*}}\22op\22:\22kiln.concat\22,\22parallel\22:false},
// CHECK-SAME: {\22function\22:\22train\22,\22kernel\22:\22kiln_kernel_0\22,{{[^}]*}}\22op\22:\22kiln.concat\22,\22parallel\22:false},
// CHECK-SAME: {\22function\22:\22train\22,\22kernel\22:\22kiln_kernel_1\22,{{[^}]*}}\22op\22:\22kiln.concat\22,\22parallel\22:false},
// CHECK-SAME: {\22function\22:\22train\22,\22kernel\22:\22kiln_kernel_1\22,{{[^}]*}}\22op\22:\22kiln.concat\22,\22parallel\22:false},
// CHECK-SAME: {\22function\22:\22train\22,\22kernel\22:\22kiln_kernel_1\22,{{[^}]*}}\22op\22:\22kiln.concat\22,\22parallel\22:false},
// CHECK-SAME: {\22function\22:\22train\22,\22kernel\22:\22kiln_kernel_2\22,{{[^}]*}}\22op\22:\22kiln.concat\22,\22parallel\22:false},
// CHECK-SAME: {\22function\22:\22train\22,\22kernel\22:\22kiln_kernel_2\22,{{[^}]*}}\22op\22:\22kiln.concat\22,\22parallel\22:false},
// CHECK-SAME: {\22function\22:\22train\22,\22kernel\22:\22kiln_kernel_2\22,{{[^}]*}}\22op\22:\22kiln.concat\22,\22parallel\22:false},
// CHECK-SAME: {\22function\22:\22train\22,\22kernel\22:\22kiln_kernel_2\22,{{[^}]*}}\22op\22:\22kiln.concat\22,\22parallel\22:false},
// CHECK-SAME: {\22function\22:\22train\22,\22kernel\22:\22kiln_kernel_3\22,{{[^}]*}}\22op\22:\22kiln.slice\22,\22parallel\22:false},
// CHECK-SAME: {\22function\22:\22train\22,\22kernel\22:\22kiln_kernel_3\22,{{[^}]*}}\22op\22:\22kiln.slice\22,\22parallel\22:false}]
// CHECK-COUNT-4: llvm.func @kiln_kernel_
// CHECK-NOT: llvm.func @kiln_kernel_
module {
  kiln.variable state @x0 : tensor<2x3x3x16xf32> init zeros
  kiln.variable state @x1 : tensor<2x3x3x16xf32> init zeros
  kiln.variable state @x2 : tensor<2x3x3x16xf32> init zeros
  kiln.variable state @x3 : tensor<2x3x3x16xf32> init zeros
  func.func @train_step(%images: tensor<2x3x3x16xf32>) -> (tensor<2x3x3x16xf32>, tensor<2x3x3x16xf32>) {
    %x0 = kiln.read @x0 : tensor<2x3x3x16xf32>
    %x1 = kiln.read @x1 : tensor<2x3x3x16xf32>
    %x2 = kiln.read @x2 : tensor<2x3x3x16xf32>
    %x3 = kiln.read @x3 : tensor<2x3x3x16xf32>
    %c2 = kiln.concat %x0, %x1 axis 3 : (tensor<2x3x3x16xf32>, tensor<2x3x3x16xf32>) -> tensor<2x3x3x32xf32>
    %c3 = kiln.concat %x0, %x1, %x2 axis 3 : (tensor<2x3x3x16xf32>, tensor<2x3x3x16xf32>, tensor<2x3x3x16xf32>) -> tensor<2x3x3x48xf32>
    %c4 = kiln.concat %x0, %x1, %x2, %x3 axis 3 : (tensor<2x3x3x16xf32>, tensor<2x3x3x16xf32>, tensor<2x3x3x16xf32>, tensor<2x3x3x16xf32>) -> tensor<2x3x3x64xf32>
    %s1 = kiln.slice %c4 axis 3 start 16 size 16 : (tensor<2x3x3x64xf32>) -> tensor<2x3x3x16xf32>
    %s3 = kiln.slice %c4 axis 3 start 48 size 16 : (tensor<2x3x3x64xf32>) -> tensor<2x3x3x16xf32>
    return %s1, %s3 : tensor<2x3x3x16xf32>, tensor<2x3x3x16xf32>
  }
}

// -----

// Negative case: the copies' views need static shapes; a dynamic batch is
// refused, naming the op.
func.func @train_step(%x: tensor<?x3x3x16xf32>) -> tensor<?x3x3x32xf32> {
  // expected-error @+1 {{'kiln.concat' op has a dynamic result shape 'tensor<?x3x3x32xf32>'; run --kiln-specialize-batch first}}
  %c = kiln.concat %x, %x axis 3 : (tensor<?x3x3x16xf32>, tensor<?x3x3x16xf32>) -> tensor<?x3x3x32xf32>
  return %c : tensor<?x3x3x32xf32>
}
