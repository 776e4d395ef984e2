// RUN: kiln-opt %s -split-input-file --kiln-lower-to-linalg -verify-diagnostics | FileCheck %s

// nChw16c: concat and slices copy whole channel blocks of the physical
// [N, C/16, H, W] view (vector<16xf32> elements); slice_backward zeroes its
// result first. A part at a block offset is the subview at offset 0 of the
// whole's view moved by that many blocks (9 vectors of 64 bytes per block
// here): the offset is a byte shift, which the outlined kernel takes from
// its call's table, so copies of equal widths share a kernel.
// CHECK-DAG: #[[$ID:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
// CHECK-LABEL: module @blocked
// CHECK: %[[A:.*]] = memref.view {{.*}} to memref<2x1x3x3xvector<16xf32>>
// CHECK: %[[C:.*]] = memref.view %{{.*}}[%{{.*}}][] : memref<?xi8> to memref<2x3x3x3xvector<16xf32>>
// CHECK: %[[AT:.*]] = memref.subview %[[C]][0, 0, 0, 0] [2, 1, 3, 3] [1, 1, 1, 1]
// CHECK: linalg.generic {indexing_maps = [#[[$ID]], #[[$ID]]], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%[[A]] : memref<2x1x3x3xvector<16xf32>>) outs(%[[AT]] :
// CHECK-NEXT: ^bb0(%[[IN:.*]]: vector<16xf32>, %{{.*}}: vector<16xf32>):
// CHECK-NEXT: linalg.yield %[[IN]] : vector<16xf32>
// CHECK: %[[C1:.*]] = memref.view %{{.*}}[%c576{{.*}}][] : memref<?xi8> to memref<2x3x3x3xvector<16xf32>>
// CHECK: memref.subview %[[C1]][0, 0, 0, 0] [2, 2, 3, 3] [1, 1, 1, 1] : memref<2x3x3x3xvector<16xf32>> to memref<2x2x3x3xvector<16xf32>, strided<[27, 9, 3, 1]>>
// CHECK: %[[S:.*]] = memref.view %{{.*}}[%c576{{.*}}][] : memref<?xi8> to memref<2x3x3x3xvector<16xf32>>
// CHECK: memref.subview %[[S]][0, 0, 0, 0] [2, 2, 3, 3] [1, 1, 1, 1] : memref<2x3x3x3xvector<16xf32>> to memref<2x2x3x3xvector<16xf32>, strided<[27, 9, 3, 1]>>
// CHECK: linalg.fill ins(%{{.*}} : vector<16xf32>) outs(%{{.*}} : memref<2x3x3x3xvector<16xf32>>)
// CHECK: memref.subview %{{.*}}[0, 0, 0, 0] [2, 2, 3, 3] [1, 1, 1, 1]
module @blocked {
  func.func @train_step(%x: tensor<2x3x3x16xf32>, %y: tensor<2x3x3x32xf32>) -> (tensor<2x3x3x48xf32>, tensor<2x3x3x48xf32>) {
    %a = kiln.reorder %x to nChw16c : tensor<2x3x3x16xf32>
    %b = kiln.reorder %y to nChw16c : tensor<2x3x3x32xf32>
    %c = kiln.concat %a, %b axis 3 {kiln.layout = #kiln.layout<nChw16c>} : (tensor<2x3x3x16xf32>, tensor<2x3x3x32xf32>) -> tensor<2x3x3x48xf32>
    %s = kiln.slice %c axis 3 start 16 size 32 {kiln.layout = #kiln.layout<nChw16c>} : (tensor<2x3x3x48xf32>) -> tensor<2x3x3x32xf32>
    %d = kiln.slice_backward %s axis 3 start 16 input_size 48 {kiln.layout = #kiln.layout<nChw16c>} : (tensor<2x3x3x32xf32>) -> tensor<2x3x3x48xf32>
    %r1 = kiln.reorder %c to nhwc : tensor<2x3x3x48xf32>
    %r3 = kiln.reorder %d to nhwc : tensor<2x3x3x48xf32>
    return %r1, %r3 : tensor<2x3x3x48xf32>, tensor<2x3x3x48xf32>
  }
}

// -----

// NHWC with channels that do not come in 16s: scalar copies at channel
// offsets, bf16 moved as bf16. The shuffle reads the channels as [g, C/g]
// and writes them as [C/g, g]; the transpose to NCHW loops over its output.
// CHECK-DAG: #[[$ID:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
// CHECK-DAG: #[[$SWAP:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d3, d2)>
// CHECK-DAG: #[[$NCHW:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d2, d3, d1)>
// CHECK-LABEL: module @nhwc
// CHECK: memref.view %{{.*}}[%[[C:.*]]][] : memref<?xi8> to memref<2x3x3x8xbf16>
// CHECK: memref.subview %{{.*}}[0, 0, 0, 0] [2, 3, 3, 3] [1, 1, 1, 1] : memref<2x3x3x8xbf16> to memref<2x3x3x3xbf16, strided<[72, 24, 8, 1]>>
// CHECK: linalg.yield %{{.*}} : bf16
// The part at channel 3 starts 6 bytes on.
// CHECK: %[[C3:.*]] = arith.constant 6 : index
// CHECK: memref.view %{{.*}}[%[[C3]]][] : memref<?xi8> to memref<2x3x3x8xbf16>
// CHECK: memref.subview %{{.*}}[0, 0, 0, 0] [2, 3, 3, 5] [1, 1, 1, 1] : memref<2x3x3x8xbf16> to memref<2x3x3x5xbf16, strided<[72, 24, 8, 1]>>
// CHECK: linalg.generic {indexing_maps = [#[[$SWAP]], #[[$ID]]], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%{{.*}} : memref<2x9x2x4xbf16>) outs(%{{.*}} : memref<2x9x4x2xbf16>)
// CHECK: linalg.generic {indexing_maps = [#[[$NCHW]], #[[$ID]]], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%{{.*}} : memref<2x3x3x8xbf16>) outs(%{{.*}} : memref<2x8x3x3xbf16>)
module @nhwc {
  func.func @train_step(%x: tensor<2x3x3x3xf32>, %y: tensor<2x3x3x5xbf16>) -> (tensor<2x3x3x8xbf16>, tensor<2x8x3x3xbf16>) {
    %xb = kiln.cast %x : tensor<2x3x3x3xf32> to tensor<2x3x3x3xbf16>
    %c = kiln.concat %xb, %y axis 3 : (tensor<2x3x3x3xbf16>, tensor<2x3x3x5xbf16>) -> tensor<2x3x3x8xbf16>
    %s = kiln.channel_shuffle %c groups 2 : tensor<2x3x3x8xbf16>
    %t = kiln.transpose %s permutation [0, 3, 1, 2] : (tensor<2x3x3x8xbf16>) -> tensor<2x8x3x3xbf16>
    return %s, %t : tensor<2x3x3x8xbf16>, tensor<2x8x3x3xbf16>
  }
}

// -----

// NHWC with 16-channel multiples: vector<16> elements, offsets in blocks
// (channel 16 is 64 bytes on).
// CHECK-LABEL: module @lanes
// CHECK: %[[AT:.*]] = arith.constant 64 : index
// CHECK: memref.view %{{.*}}[%[[AT]]][] : memref<?xi8> to memref<2x3x3x2xvector<16xf32>>
// CHECK: memref.subview %{{.*}}[0, 0, 0, 0] [2, 3, 3, 1] [1, 1, 1, 1] : memref<2x3x3x2xvector<16xf32>> to memref<2x3x3x1xvector<16xf32>, strided<[18, 6, 2, 1]>>
module @lanes {
  func.func @train_step(%x: tensor<2x3x3x32xf32>) -> (tensor<2x3x3x16xf32>) {
    %s = kiln.slice %x axis 3 start 16 size 16 : (tensor<2x3x3x32xf32>) -> tensor<2x3x3x16xf32>
    return %s : tensor<2x3x3x16xf32>
  }
}

// -----

// Negative case: the loops read each operand as its layout says; a concat
// computing in nChw16c whose operand is stored NHWC is refused.
func.func @train_step(%x: tensor<2x3x3x16xf32>) -> tensor<2x3x3x32xf32> {
  %r = kiln.reorder %x to nChw16c : tensor<2x3x3x16xf32>
  // expected-error @+1 {{'kiln.concat' op reads operand #1 as nChw16c but it is stored nhwc (a kiln.reorder is missing)}}
  %c = kiln.concat %r, %x axis 3 {kiln.layout = #kiln.layout<nChw16c>} : (tensor<2x3x3x16xf32>, tensor<2x3x3x16xf32>) -> tensor<2x3x3x32xf32>
  %n = kiln.reorder %c to nhwc : tensor<2x3x3x32xf32>
  return %n : tensor<2x3x3x32xf32>
}
