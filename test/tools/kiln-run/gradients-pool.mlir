// Gradient checks of max_pool, avg_pool and global_avg_pool (and their
// backward ops) through --kiln-autodiff, with several windows, strides and
// (asymmetric) paddings. Max-pool windows change their winner under
// perturbation; the check replays the unperturbed winners (--check-kinks).
// RUN: kiln-opt %s -split-input-file --kiln-autodiff | kiln-run -split-input-file --check-gradients --synthetic-inputs --batch=2 | FileCheck %s
// The same with --check-kinks=detect (perturbations that change a window's
// winner are avoided rather than replayed).
// RUN: kiln-opt %s -split-input-file --kiln-autodiff | kiln-run -split-input-file --check-gradients --check-kinks=detect --check-step=0.01 --synthetic-inputs --batch=2 | FileCheck %s

// CHECK-LABEL: @max2x2.a 3x3x2x3xf32: 16/54 elements, max |grad| {{[-+.e0-9]+}}, error {{[-+.e0-9]+}} ok{{$}}
// CHECK: @max2x2.fc 27x3xf32: 16/81 elements, max |grad| {{[-+.e0-9]+}}, error {{[-+.e0-9]+}} ok{{$}}
// CHECK: gradient check passed: 2 parameters (0 unchecked)
module {
  kiln.variable parameter @max2x2.a : tensor<3x3x2x3xf32> init he_normal
  kiln.variable parameter @max2x2.fc : tensor<27x3xf32> init normal std 1.000000e-01
  func.func @forward(%x: tensor<?x6x6x2xf32>, %labels: tensor<?xi32>) -> (tensor<f32>, tensor<?x3xf32>) {
    %v1 = kiln.read @max2x2.a : tensor<3x3x2x3xf32>
    %v2 = kiln.conv2d %x, %v1 stride [1, 1] pad [1, 1, 1, 1] : (tensor<?x6x6x2xf32>, tensor<3x3x2x3xf32>) -> tensor<?x6x6x3xf32>
    %v3 = kiln.max_pool %v2 window [2, 2] stride [2, 2] pad [0, 0, 0, 0] : (tensor<?x6x6x3xf32>) -> tensor<?x3x3x3xf32>
    %v4 = kiln.reshape %v3 : tensor<?x3x3x3xf32> to tensor<?x27xf32>
    %v5 = kiln.read @max2x2.fc : tensor<27x3xf32>
    %v6 = kiln.dense %v4, %v5 : (tensor<?x27xf32>, tensor<27x3xf32>) -> tensor<?x3xf32>
    %loss = kiln.softmax_cross_entropy %v6, %labels : (tensor<?x3xf32>, tensor<?xi32>) -> tensor<f32>
    return %loss, %v6 : tensor<f32>, tensor<?x3xf32>
  }
}

// -----

// CHECK-LABEL: @max3x3pad.a 3x3x2x3xf32: 16/54 elements, max |grad| {{[-+.e0-9]+}}, error {{[-+.e0-9]+}} ok{{$}}
// CHECK: @max3x3pad.fc 27x3xf32: 16/81 elements, max |grad| {{[-+.e0-9]+}}, error {{[-+.e0-9]+}} ok{{$}}
// CHECK: gradient check passed: 2 parameters (0 unchecked)
module {
  kiln.variable parameter @max3x3pad.a : tensor<3x3x2x3xf32> init he_normal
  kiln.variable parameter @max3x3pad.fc : tensor<27x3xf32> init normal std 1.000000e-01
  func.func @forward(%x: tensor<?x6x6x2xf32>, %labels: tensor<?xi32>) -> (tensor<f32>, tensor<?x3xf32>) {
    %v1 = kiln.read @max3x3pad.a : tensor<3x3x2x3xf32>
    %v2 = kiln.conv2d %x, %v1 stride [1, 1] pad [1, 1, 1, 1] : (tensor<?x6x6x2xf32>, tensor<3x3x2x3xf32>) -> tensor<?x6x6x3xf32>
    %v3 = kiln.max_pool %v2 window [3, 3] stride [2, 2] pad [1, 1, 1, 1] : (tensor<?x6x6x3xf32>) -> tensor<?x3x3x3xf32>
    %v4 = kiln.reshape %v3 : tensor<?x3x3x3xf32> to tensor<?x27xf32>
    %v5 = kiln.read @max3x3pad.fc : tensor<27x3xf32>
    %v6 = kiln.dense %v4, %v5 : (tensor<?x27xf32>, tensor<27x3xf32>) -> tensor<?x3xf32>
    %loss = kiln.softmax_cross_entropy %v6, %labels : (tensor<?x3xf32>, tensor<?xi32>) -> tensor<f32>
    return %loss, %v6 : tensor<f32>, tensor<?x3xf32>
  }
}

// -----

// CHECK-LABEL: @maxasym.a 3x3x2x3xf32: 16/54 elements, max |grad| {{[-+.e0-9]+}}, error {{[-+.e0-9]+}} ok{{$}}
// CHECK: @maxasym.fc 54x3xf32: 16/162 elements, max |grad| {{[-+.e0-9]+}}, error {{[-+.e0-9]+}} ok{{$}}
// CHECK: gradient check passed: 2 parameters (0 unchecked)
module {
  kiln.variable parameter @maxasym.a : tensor<3x3x2x3xf32> init he_normal
  kiln.variable parameter @maxasym.fc : tensor<54x3xf32> init normal std 1.000000e-01
  func.func @forward(%x: tensor<?x6x6x2xf32>, %labels: tensor<?xi32>) -> (tensor<f32>, tensor<?x3xf32>) {
    %v1 = kiln.read @maxasym.a : tensor<3x3x2x3xf32>
    %v2 = kiln.conv2d %x, %v1 stride [1, 1] pad [1, 1, 1, 1] : (tensor<?x6x6x2xf32>, tensor<3x3x2x3xf32>) -> tensor<?x6x6x3xf32>
    %v3 = kiln.max_pool %v2 window [3, 2] stride [1, 2] pad [0, 2, 1, 0] : (tensor<?x6x6x3xf32>) -> tensor<?x6x3x3xf32>
    %v4 = kiln.reshape %v3 : tensor<?x6x3x3xf32> to tensor<?x54xf32>
    %v5 = kiln.read @maxasym.fc : tensor<54x3xf32>
    %v6 = kiln.dense %v4, %v5 : (tensor<?x54xf32>, tensor<54x3xf32>) -> tensor<?x3xf32>
    %loss = kiln.softmax_cross_entropy %v6, %labels : (tensor<?x3xf32>, tensor<?xi32>) -> tensor<f32>
    return %loss, %v6 : tensor<f32>, tensor<?x3xf32>
  }
}

// -----

// CHECK-LABEL: @avg2x2.a 3x3x2x3xf32: 16/54 elements, max |grad| {{[-+.e0-9]+}}, error {{[-+.e0-9]+}} ok{{$}}
// CHECK: @avg2x2.fc 27x3xf32: 16/81 elements, max |grad| {{[-+.e0-9]+}}, error {{[-+.e0-9]+}} ok{{$}}
// CHECK: gradient check passed: 2 parameters (0 unchecked)
module {
  kiln.variable parameter @avg2x2.a : tensor<3x3x2x3xf32> init he_normal
  kiln.variable parameter @avg2x2.fc : tensor<27x3xf32> init normal std 1.000000e-01
  func.func @forward(%x: tensor<?x6x6x2xf32>, %labels: tensor<?xi32>) -> (tensor<f32>, tensor<?x3xf32>) {
    %v1 = kiln.read @avg2x2.a : tensor<3x3x2x3xf32>
    %v2 = kiln.conv2d %x, %v1 stride [1, 1] pad [1, 1, 1, 1] : (tensor<?x6x6x2xf32>, tensor<3x3x2x3xf32>) -> tensor<?x6x6x3xf32>
    %v3 = kiln.avg_pool %v2 window [2, 2] stride [2, 2] pad [0, 0, 0, 0] : (tensor<?x6x6x3xf32>) -> tensor<?x3x3x3xf32>
    %v4 = kiln.reshape %v3 : tensor<?x3x3x3xf32> to tensor<?x27xf32>
    %v5 = kiln.read @avg2x2.fc : tensor<27x3xf32>
    %v6 = kiln.dense %v4, %v5 : (tensor<?x27xf32>, tensor<27x3xf32>) -> tensor<?x3xf32>
    %loss = kiln.softmax_cross_entropy %v6, %labels : (tensor<?x3xf32>, tensor<?xi32>) -> tensor<f32>
    return %loss, %v6 : tensor<f32>, tensor<?x3xf32>
  }
}

// -----

// CHECK-LABEL: @avg3x3pad.a 3x3x2x3xf32: 16/54 elements, max |grad| {{[-+.e0-9]+}}, error {{[-+.e0-9]+}} ok{{$}}
// CHECK: @avg3x3pad.fc 27x3xf32: 16/81 elements, max |grad| {{[-+.e0-9]+}}, error {{[-+.e0-9]+}} ok{{$}}
// CHECK: gradient check passed: 2 parameters (0 unchecked)
module {
  kiln.variable parameter @avg3x3pad.a : tensor<3x3x2x3xf32> init he_normal
  kiln.variable parameter @avg3x3pad.fc : tensor<27x3xf32> init normal std 1.000000e-01
  func.func @forward(%x: tensor<?x6x6x2xf32>, %labels: tensor<?xi32>) -> (tensor<f32>, tensor<?x3xf32>) {
    %v1 = kiln.read @avg3x3pad.a : tensor<3x3x2x3xf32>
    %v2 = kiln.conv2d %x, %v1 stride [1, 1] pad [1, 1, 1, 1] : (tensor<?x6x6x2xf32>, tensor<3x3x2x3xf32>) -> tensor<?x6x6x3xf32>
    %v3 = kiln.avg_pool %v2 window [3, 3] stride [2, 2] pad [1, 1, 1, 1] : (tensor<?x6x6x3xf32>) -> tensor<?x3x3x3xf32>
    %v4 = kiln.reshape %v3 : tensor<?x3x3x3xf32> to tensor<?x27xf32>
    %v5 = kiln.read @avg3x3pad.fc : tensor<27x3xf32>
    %v6 = kiln.dense %v4, %v5 : (tensor<?x27xf32>, tensor<27x3xf32>) -> tensor<?x3xf32>
    %loss = kiln.softmax_cross_entropy %v6, %labels : (tensor<?x3xf32>, tensor<?xi32>) -> tensor<f32>
    return %loss, %v6 : tensor<f32>, tensor<?x3xf32>
  }
}

// -----

// CHECK-LABEL: @avgasym.a 3x3x2x3xf32: 16/54 elements, max |grad| {{[-+.e0-9]+}}, error {{[-+.e0-9]+}} ok{{$}}
// CHECK: @avgasym.fc 54x3xf32: 16/162 elements, max |grad| {{[-+.e0-9]+}}, error {{[-+.e0-9]+}} ok{{$}}
// CHECK: gradient check passed: 2 parameters (0 unchecked)
module {
  kiln.variable parameter @avgasym.a : tensor<3x3x2x3xf32> init he_normal
  kiln.variable parameter @avgasym.fc : tensor<54x3xf32> init normal std 1.000000e-01
  func.func @forward(%x: tensor<?x6x6x2xf32>, %labels: tensor<?xi32>) -> (tensor<f32>, tensor<?x3xf32>) {
    %v1 = kiln.read @avgasym.a : tensor<3x3x2x3xf32>
    %v2 = kiln.conv2d %x, %v1 stride [1, 1] pad [1, 1, 1, 1] : (tensor<?x6x6x2xf32>, tensor<3x3x2x3xf32>) -> tensor<?x6x6x3xf32>
    %v3 = kiln.avg_pool %v2 window [2, 3] stride [2, 1] pad [1, 0, 0, 2] : (tensor<?x6x6x3xf32>) -> tensor<?x3x6x3xf32>
    %v4 = kiln.reshape %v3 : tensor<?x3x6x3xf32> to tensor<?x54xf32>
    %v5 = kiln.read @avgasym.fc : tensor<54x3xf32>
    %v6 = kiln.dense %v4, %v5 : (tensor<?x54xf32>, tensor<54x3xf32>) -> tensor<?x3xf32>
    %loss = kiln.softmax_cross_entropy %v6, %labels : (tensor<?x3xf32>, tensor<?xi32>) -> tensor<f32>
    return %loss, %v6 : tensor<f32>, tensor<?x3xf32>
  }
}

// -----

// CHECK-LABEL: @gap.a 3x3x2x3xf32: 16/54 elements, max |grad| {{[-+.e0-9]+}}, error {{[-+.e0-9]+}} ok{{$}}
// CHECK: @gap.fc 3x3xf32: 9/9 elements, max |grad| {{[-+.e0-9]+}}, error {{[-+.e0-9]+}} ok{{$}}
// CHECK: gradient check passed: 2 parameters (0 unchecked)
module {
  kiln.variable parameter @gap.a : tensor<3x3x2x3xf32> init he_normal
  kiln.variable parameter @gap.fc : tensor<3x3xf32> init normal std 1.000000e+00
  func.func @forward(%x: tensor<?x6x6x2xf32>, %labels: tensor<?xi32>) -> (tensor<f32>, tensor<?x3xf32>) {
    %v1 = kiln.read @gap.a : tensor<3x3x2x3xf32>
    %v2 = kiln.conv2d %x, %v1 stride [1, 1] pad [1, 1, 1, 1] : (tensor<?x6x6x2xf32>, tensor<3x3x2x3xf32>) -> tensor<?x6x6x3xf32>
    %v3 = kiln.relu %v2 : tensor<?x6x6x3xf32>
    %v4 = kiln.global_avg_pool %v3 : (tensor<?x6x6x3xf32>) -> tensor<?x3xf32>
    %v5 = kiln.read @gap.fc : tensor<3x3xf32>
    %v6 = kiln.dense %v4, %v5 : (tensor<?x3xf32>, tensor<3x3xf32>) -> tensor<?x3xf32>
    %loss = kiln.softmax_cross_entropy %v6, %labels : (tensor<?x3xf32>, tensor<?xi32>) -> tensor<f32>
    return %loss, %v6 : tensor<f32>, tensor<?x3xf32>
  }
}

// -----

// Ceil mode: a 3x3 window with stride 2 takes 3 positions of 6 (2 in floor
// mode), the last one overhanging the input by one row and column.
// CHECK-LABEL: @maxceil.a 3x3x2x3xf32: 16/54 elements, max |grad| {{[-+.e0-9]+}}, error {{[-+.e0-9]+}} ok{{$}}
// CHECK: @maxceil.fc 27x3xf32: 16/81 elements, max |grad| {{[-+.e0-9]+}}, error {{[-+.e0-9]+}} ok{{$}}
// CHECK: gradient check passed: 2 parameters (0 unchecked)
module {
  kiln.variable parameter @maxceil.a : tensor<3x3x2x3xf32> init he_normal
  kiln.variable parameter @maxceil.fc : tensor<27x3xf32> init normal std 1.000000e-01
  func.func @forward(%x: tensor<?x6x6x2xf32>, %labels: tensor<?xi32>) -> (tensor<f32>, tensor<?x3xf32>) {
    %v1 = kiln.read @maxceil.a : tensor<3x3x2x3xf32>
    %v2 = kiln.conv2d %x, %v1 stride [1, 1] pad [1, 1, 1, 1] : (tensor<?x6x6x2xf32>, tensor<3x3x2x3xf32>) -> tensor<?x6x6x3xf32>
    %v3 = kiln.max_pool %v2 window [3, 3] stride [2, 2] pad [0, 0, 0, 0] ceil_mode : (tensor<?x6x6x3xf32>) -> tensor<?x3x3x3xf32>
    %v4 = kiln.reshape %v3 : tensor<?x3x3x3xf32> to tensor<?x27xf32>
    %v5 = kiln.read @maxceil.fc : tensor<27x3xf32>
    %v6 = kiln.dense %v4, %v5 : (tensor<?x27xf32>, tensor<27x3xf32>) -> tensor<?x3xf32>
    %loss = kiln.softmax_cross_entropy %v6, %labels : (tensor<?x3xf32>, tensor<?xi32>) -> tensor<f32>
    return %loss, %v6 : tensor<f32>, tensor<?x3xf32>
  }
}

// -----

// Ceil mode with padding: 2x2 windows with stride 2 over 6 rows padded by
// one on top take 4 positions (3 in floor mode): the first half padding,
// the last half overhang, both averaged over their one real row.
// CHECK-LABEL: @avgceil.a 3x3x2x3xf32: 16/54 elements, max |grad| {{[-+.e0-9]+}}, error {{[-+.e0-9]+}} ok{{$}}
// CHECK: @avgceil.fc 48x3xf32: 16/144 elements, max |grad| {{[-+.e0-9]+}}, error {{[-+.e0-9]+}} ok{{$}}
// CHECK: gradient check passed: 2 parameters (0 unchecked)
module {
  kiln.variable parameter @avgceil.a : tensor<3x3x2x3xf32> init he_normal
  kiln.variable parameter @avgceil.fc : tensor<48x3xf32> init normal std 1.000000e-01
  func.func @forward(%x: tensor<?x6x6x2xf32>, %labels: tensor<?xi32>) -> (tensor<f32>, tensor<?x3xf32>) {
    %v1 = kiln.read @avgceil.a : tensor<3x3x2x3xf32>
    %v2 = kiln.conv2d %x, %v1 stride [1, 1] pad [1, 1, 1, 1] : (tensor<?x6x6x2xf32>, tensor<3x3x2x3xf32>) -> tensor<?x6x6x3xf32>
    %v3 = kiln.avg_pool %v2 window [2, 2] stride [2, 2] pad [1, 0, 1, 0] ceil_mode : (tensor<?x6x6x3xf32>) -> tensor<?x4x4x3xf32>
    %v4 = kiln.reshape %v3 : tensor<?x4x4x3xf32> to tensor<?x48xf32>
    %v5 = kiln.read @avgceil.fc : tensor<48x3xf32>
    %v6 = kiln.dense %v4, %v5 : (tensor<?x48xf32>, tensor<48x3xf32>) -> tensor<?x3xf32>
    %loss = kiln.softmax_cross_entropy %v6, %labels : (tensor<?x3xf32>, tensor<?xi32>) -> tensor<f32>
    return %loss, %v6 : tensor<f32>, tensor<?x3xf32>
  }
}
