// kiln-run's errors: each names where it happened (the op's or variable's
// location, the step, the file and tensor) and exits with status 1.
// RUN: rm -rf %t && mkdir -p %t
// RUN: %python %S/Inputs/reference.py write %t

// An op outside what kiln-run executes, and IR the verifier rejects
// (locations are within each split).
// RUN: not kiln-run %s -split-input-file --inputs=%t/hand-inputs.safetensors 2>&1 \
// RUN:   | FileCheck %s --check-prefix=OPS
// OPS: errors.mlir:{{[0-9]+}} offset :{{[0-9]+}}:14: error: 'arith.addf' op (step 0) in w: is not supported by kiln-run (it executes the kiln dialect, arith.constant and func.return)
// OPS: errors.mlir:{{[0-9]+}} offset :{{[0-9]+}}:5: error: type of return operand 0 ('tensor<?x2xf32>') doesn't match function result type ('tensor<?x2xbf16>')

module {
  kiln.variable parameter @w : tensor<2x3xf32> init he_normal
  func.func @forward(%x: tensor<?x2xf32>, %labels: tensor<?xi32>) -> (tensor<f32>, tensor<?x3xf32>) {
    %w = kiln.read @w : tensor<2x3xf32>
    %logits = kiln.dense %x, %w : (tensor<?x2xf32>, tensor<2x3xf32>) -> tensor<?x3xf32>
    %twice = arith.addf %logits, %logits : tensor<?x3xf32>
    %loss = kiln.softmax_cross_entropy %twice, %labels : (tensor<?x3xf32>, tensor<?xi32>) -> tensor<f32>
    return %loss, %twice : tensor<f32>, tensor<?x3xf32>
  }
}

// -----

module {
  func.func @forward(%x: tensor<?x2xf32>) -> tensor<?x2xbf16> {
    %y = kiln.relu %x : tensor<?x2xf32>
    return %y : tensor<?x2xf32>
  }
}

// The errors below run the model of forward-values.mlir.
// RUN: not kiln-run %S/forward-values.mlir --load=%t/weights.safetensors \
// RUN:   --inputs=%t/inputs-badshape.safetensors 2>&1 | FileCheck %s --check-prefix=SHAPE
// SHAPE: forward-values.mlir:{{[0-9]+}}:{{[0-9]+}}: error: {{.*}}inputs-badshape.safetensors: 'arg0' has runtime type tensor<2x3x3x2xf32>, but its type is tensor<?x3x3x1xf32>

// RUN: not kiln-run %S/forward-values.mlir --load=%t/weights.safetensors \
// RUN:   --inputs=%t/inputs-missing.safetensors 2>&1 | FileCheck %s --check-prefix=MISSING-INPUT
// MISSING-INPUT: error: {{.*}}inputs-missing.safetensors has no 'arg1' for argument 1 of @forward

// A label outside [0, 3), found at the loss in the second of two steps'
// worth of inputs is reported with the step, the label and its position.
// RUN: not kiln-run %S/forward-values.mlir --load=%t/weights.safetensors --steps=2 --first-step=7 \
// RUN:   --inputs=%t/inputs-badlabel.safetensors 2>&1 | FileCheck %s --check-prefix=LABEL
// LABEL: forward-values.mlir:{{[0-9]+}}:{{[0-9]+}}: error: 'kiln.softmax_cross_entropy' op (step 7) {{.*}}label 3{{.*}}

// RUN: not kiln-run %S/forward-values.mlir --load=%t/weights-missing.safetensors \
// RUN:   --inputs=%t/inputs.safetensors 2>&1 | FileCheck %s --check-prefix=LOAD-MISSING
// LOAD-MISSING: forward-values.mlir:{{[0-9]+}}:3: error: 'kiln.variable' op @fc.b is missing from {{.*}}weights-missing.safetensors

// RUN: not kiln-run %S/forward-values.mlir --load=%t/weights-extra.safetensors \
// RUN:   --inputs=%t/inputs.safetensors 2>&1 | FileCheck %s --check-prefix=LOAD-EXTRA
// LOAD-EXTRA: error: {{.*}}weights-extra.safetensors holds 'fc.extra', which is not a variable of the module

// RUN: not kiln-run %S/forward-values.mlir --load=%t/weights-badshape.safetensors \
// RUN:   --inputs=%t/inputs.safetensors 2>&1 | FileCheck %s --check-prefix=LOAD-SHAPE
// LOAD-SHAPE: error: 'kiln.variable' op @fc.w is tensor<2x3xf32> but {{.*}}weights-badshape.safetensors holds tensor<3x2xf32>

// A corrupt file: the safetensors reader's message, naming the file.
// RUN: head -c 20 %t/weights.safetensors > %t/truncated.safetensors
// RUN: not kiln-run %S/forward-values.mlir --load=%t/truncated.safetensors \
// RUN:   --inputs=%t/inputs.safetensors 2>&1 | FileCheck %s --check-prefix=CORRUPT
// CORRUPT: error: {{.*}}truncated.safetensors: header size {{[0-9]+}} exceeds the file

// RUN: not kiln-run %S/forward-values.mlir --function=nope 2>&1 | FileCheck %s --check-prefix=FUNCTION
// FUNCTION: error: no function @nope in the module (choose one with --function)

// RUN: not kiln-run %S/forward-values.mlir --load=%t/weights.safetensors 2>&1 \
// RUN:   | FileCheck %s --check-prefix=NO-INPUTS
// NO-INPUTS: error: @forward takes 2 arguments: pass --inputs=FILE or --synthetic-inputs --batch=N

// RUN: not kiln-run %S/forward-values.mlir --synthetic-inputs 2>&1 \
// RUN:   | FileCheck %s --check-prefix=NO-BATCH
// NO-BATCH: error: --synthetic-inputs needs a positive --batch
