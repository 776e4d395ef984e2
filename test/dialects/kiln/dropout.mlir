// kiln.dropout: round trip, and each verifier message.
// RUN: kiln-opt %s -split-input-file -verify-diagnostics | FileCheck %s

// CHECK-LABEL: func.func @dropout
// CHECK: kiln.dropout %{{.*}}, %{{.*}} ratio 2.000000e-01 seed 0 stream 1 : tensor<?x1280xf32>, tensor<i64>
// CHECK: kiln.dropout %{{.*}}, %{{.*}} ratio 5.000000e-01 seed -3 stream 4294967295 : tensor<2x13x13x512xbf16>, tensor<i64>
// CHECK: kiln.dropout %{{.*}}, %{{.*}} ratio 0.000000e+00 seed 1 stream 0 : tensor<f32>, tensor<i64>
func.func @dropout(%x: tensor<?x1280xf32>, %y: tensor<2x13x13x512xbf16>, %z: tensor<f32>, %step: tensor<i64>) -> (tensor<?x1280xf32>, tensor<2x13x13x512xbf16>, tensor<f32>) {
  %a = kiln.dropout %x, %step ratio 2.000000e-01 seed 0 stream 1 : tensor<?x1280xf32>, tensor<i64>
  %b = kiln.dropout %y, %step ratio 5.000000e-01 seed -3 stream 4294967295 : tensor<2x13x13x512xbf16>, tensor<i64>
  %c = kiln.dropout %z, %step ratio 0.000000e+00 seed 1 stream 0 : tensor<f32>, tensor<i64>
  return %a, %b, %c : tensor<?x1280xf32>, tensor<2x13x13x512xbf16>, tensor<f32>
}

// -----

func.func @ratio_one(%x: tensor<4xf32>, %step: tensor<i64>) -> tensor<4xf32> {
  // expected-error @+1 {{'kiln.dropout' op ratio 1.000000e+00 is outside [0, 1)}}
  %a = kiln.dropout %x, %step ratio 1.000000e+00 seed 0 stream 0 : tensor<4xf32>, tensor<i64>
  return %a : tensor<4xf32>
}

// -----

func.func @ratio_negative(%x: tensor<4xf32>, %step: tensor<i64>) -> tensor<4xf32> {
  // expected-error @+1 {{'kiln.dropout' op ratio -1.000000e-01 is outside [0, 1)}}
  %a = kiln.dropout %x, %step ratio -1.000000e-01 seed 0 stream 0 : tensor<4xf32>, tensor<i64>
  return %a : tensor<4xf32>
}

// -----

func.func @ratio_nan(%x: tensor<4xf32>, %step: tensor<i64>) -> tensor<4xf32> {
  // expected-error @+1 {{'kiln.dropout' op ratio nan is outside [0, 1)}}
  %a = kiln.dropout %x, %step ratio 0x7FC00000 seed 0 stream 0 : tensor<4xf32>, tensor<i64>
  return %a : tensor<4xf32>
}

// -----

func.func @stream(%x: tensor<4xf32>, %step: tensor<i64>) -> tensor<4xf32> {
  // expected-error @+1 {{'kiln.dropout' op stream 4294967296 is outside [0, 2^32)}}
  %a = kiln.dropout %x, %step ratio 5.000000e-01 seed 0 stream 4294967296 : tensor<4xf32>, tensor<i64>
  return %a : tensor<4xf32>
}

// -----

func.func @step_type(%x: tensor<4xf32>, %step: tensor<i32>) -> tensor<4xf32> {
  // expected-error @+1 {{'kiln.dropout' op operand #1 must be 0D tensor of 64-bit signless integer values}}
  %a = kiln.dropout %x, %step ratio 5.000000e-01 seed 0 stream 0 : tensor<4xf32>, tensor<i32>
  return %a : tensor<4xf32>
}

// -----

func.func @integer_input(%x: tensor<4xi32>, %step: tensor<i64>) -> tensor<4xi32> {
  // expected-error @+1 {{'kiln.dropout' op operand #0 must be ranked tensor of 32-bit float or bfloat16 type values}}
  %a = kiln.dropout %x, %step ratio 5.000000e-01 seed 0 stream 0 : tensor<4xi32>, tensor<i64>
  return %a : tensor<4xi32>
}
