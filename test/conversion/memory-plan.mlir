// The memory plan reuses a dead value's slot and records the manifest.
// RUN: kiln-opt %s --kiln-lower-to-linalg | FileCheck %s

// Scratch starts at 0 (no variables). The input images take 0..4096 (they
// live throughout); %a and %b are alive together; %c takes %a's slot once %a
// is dead; the labels come last (smallest).
// CHECK: kiln.manifest = "{{.*}}\22arena_bytes\22:12352
// CHECK-LABEL: func.func @kiln_model_eval_step
func.func @eval_step(%x: tensor<1x1024xf32>, %labels: tensor<1xi32>) -> (tensor<f32>, tensor<1x1024xf32>) {
  // CHECK: %[[A_OFF:.*]] = arith.constant 4096 : index
  // CHECK: memref.view %{{.*}}[%[[A_OFF]]][] : memref<?xi8> to memref<64xvector<16xf32>>
  %a = kiln.relu %x : tensor<1x1024xf32>
  // CHECK: %[[B_OFF:.*]] = arith.constant 8192 : index
  // CHECK-NEXT: memref.view %{{.*}}[%[[B_OFF]]][]
  %b = kiln.relu %a : tensor<1x1024xf32>
  // CHECK: %[[C_OFF:.*]] = arith.constant 4096 : index
  // CHECK-NEXT: memref.view %{{.*}}[%[[C_OFF]]][] : memref<?xi8> to memref<64xvector<16xf32>>
  %c = kiln.relu %b : tensor<1x1024xf32>
  %loss = kiln.softmax_cross_entropy %c, %labels : (tensor<1x1024xf32>, tensor<1xi32>) -> tensor<f32>
  return %loss, %c : tensor<f32>, tensor<1x1024xf32>
}
