// RUN: kiln-opt %s --kiln-lower-to-linalg | FileCheck %s

// Initial values in the manifest (docs/model-abi.md): a constant of at most
// 16 elements stays numbers ("value", as the schedule's slots), a larger
// one is referred to ("data": its byte count and the module attribute that
// holds it) and its attribute, a dense_resource or dense, moves to
// kiln.initial_values, from which the object's manifest takes raw bytes; a
// larger splat is one number. Boundaries: 16 elements are numbers, 17 are
// data.
// CHECK: module @values attributes {kiln.initial_values = {b17 = dense<{{.*}}> : tensor<17xf32>, w = dense_resource<w_blob> : tensor<4x5xf32>}, kiln.manifest = "
// CHECK-SAME: {\22data\22:{\22bytes\22:80,\22in\22:\22kiln.initial_values\22},\22dtype\22:\22f32\22,\22init\22:\22constant\22,\22kind\22:\22parameter\22,\22name\22:\22w\22,
// CHECK-SAME: \22init\22:\22constant\22,\22kind\22:\22parameter\22,\22name\22:\22b16\22,\22offset\22:{{[0-9]+}},\22shape\22:[16],\22value\22:[0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15]}
// CHECK-SAME: {\22data\22:{\22bytes\22:68,\22in\22:\22kiln.initial_values\22},\22dtype\22:\22f32\22,\22init\22:\22constant\22,\22kind\22:\22parameter\22,\22name\22:\22b17\22,
// CHECK-SAME: \22init\22:\22constant\22,\22kind\22:\22state\22,\22name\22:\22s\22,\22offset\22:{{[0-9]+}},\22shape\22:[32],\22value\22:[0.5]}
// CHECK-NOT: kiln.variable
module @values {
  kiln.variable parameter @w : tensor<4x5xf32> init constant value dense_resource<w_blob> : tensor<4x5xf32>
  kiln.variable parameter @b16 : tensor<16xf32> init constant value dense<[0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0, 13.0, 14.0, 15.0]> : tensor<16xf32>
  kiln.variable parameter @b17 : tensor<17xf32> init constant value dense<[0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0, 13.0, 14.0, 15.0, 16.0]> : tensor<17xf32>
  kiln.variable state @s : tensor<32xf32> init constant value dense<0.5> : tensor<32xf32>
  func.func @eval_step(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
    %y = kiln.relu %x : tensor<2x4xf32>
    return %y : tensor<2x4xf32>
  }
}

{-#
  dialect_resources: {
    builtin: {
      w_blob: "0x04000000000000C00000E0BF0000C0BF0000A0BF000080BF000040BF000000BF000080BE000000000000803E0000003F0000403F0000803F0000A03F0000C03F0000E03F00000040000010400000204000003040"
    }
  }
#-}
