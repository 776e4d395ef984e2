//===- Passes.td - Kiln passes -------------------------------*- tablegen -*-===//
//
// Every Kiln pass, grouped by stage and alphabetical within a group. Flags are
// `kiln-<verb>-<noun>`; passes are thin drivers over public pattern and
// analysis functions.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_PASSES_PASSES_TD
#define KILN_PASSES_PASSES_TD

include "mlir/Pass/PassBase.td"

//===----------------------------------------------------------------------===//
// Training step
//===----------------------------------------------------------------------===//

def KilnAutodiff : Pass<"kiln-autodiff", "mlir::ModuleOp"> {
  let summary = "Builds the training step: forward, loss and parameter gradients";
  let description = [{
    Differentiates the forward function (whose first result is the scalar
    loss) in reverse mode and adds a training-step function that returns the
    forward results followed by the gradient of every parameter, in
    declaration order, each result marked `kiln.gradient_of = @parameter`.
    The forward function's `kiln.assign`s (batch-norm running statistics)
    stay in the step. Each op's gradient comes from its GradientOpInterface;
    an op the loss depends on that has none is an error naming the op.
  }];
  let options = [
    Option<"forwardFunction", "forward", "std::string", /*default=*/"\"forward\"",
           "The function to differentiate">,
    Option<"stepFunction", "step", "std::string", /*default=*/"\"train_step\"",
           "The name of the training-step function to create">
  ];
  let dependentDialects = ["mlir::arith::ArithDialect"];
}

def KilnInsertAllReduce : Pass<"kiln-insert-allreduce", "mlir::ModuleOp"> {
  let summary = "Groups gradients into buckets, each averaged over ranks by one allreduce";
  let description = [{
    Takes the gradients a training step returns (`kiln.gradient_of`), in the
    order the backward pass produces them, and groups them greedily into
    buckets of at least `bucket-bytes` (the last may be smaller). Each bucket
    gets one `kiln.allreduce`, placed right after its last gradient is
    computed, so the runtime can reduce it while the rest of the backward
    pass runs; the step then returns the averaged gradients.
  }];
  let options = [
    Option<"stepFunction", "step", "std::string", /*default=*/"\"train_step\"",
           "The training-step function">,
    Option<"bucketBytes", "bucket-bytes", "int64_t", /*default=*/"25 << 20",
           "Smallest bucket size in bytes (25 MiB, as PyTorch DDP)">
  ];
}

def KilnOptimizer : Pass<"kiln-optimizer", "mlir::ModuleOp"> {
  let summary = "Adds the learning-rate schedule and the parameter updates to a training step";
  let description = [{
    Consumes the gradients a training step returns: for each parameter, adds
    a momentum state variable `<name>.momentum` and an `sgd_update` or
    `lars_update` whose results are assigned to the parameter and its
    momentum. The step gains a last argument `%step: tensor<i64>` (the
    optimizer steps already taken) and returns its forward results followed
    by the learning rate it used. The schedule's parameters live in the state
    variable `@kiln.lr_schedule` (f64), so the runtime can override them.
    Which parameters are exempt goes by what each is, from the ops reading
    it (not its rank): `bn` (a batch norm's scale or offset) or `bias` (a
    dense layer's bias). `no-decay` lists the kinds not decayed and
    `lars-skip` those whose LARS trust ratio is 1; both default to
    `bn,bias` (Goyal et al., MLPerf TF2), while tensorflow/tpu's ResNet and
    MLPerf v0.6 decay the classifier's bias (`no-decay=bn`). `lars-form`
    chooses MLPerf TF2's update (`tf2`, lr * trust inside the momentum) or
    v0.6's (`v0.6`: the momentum of the decayed gradient, scaled by
    lr * trust at the step, the trust ratio of the decayed gradient). Label
    smoothing is set on the step's loss and its gradient. `warmup-steps` may
    be fractional (kiln.learning_rate).

    Step counts may be given in epochs instead (`warmup-epochs`,
    `decay-epochs`, `boundary-epochs`), each exclusive with its step option:
    the steps per epoch depend on the data set, the batch and the number of
    ranks, which only the runtime knows. Such a slot holds -1 (no valid step
    count) and the variable records its epochs in the `kiln.epochs`
    dictionary (slot name to epochs); a decaying schedule given neither
    `total-steps` nor `decay-epochs` names its horizon slot in
    `kiln.run_length`, which the runtime fills with the run's length. The
    manifest's `schedule` entry carries both (docs/model-abi.md).

    ```mlir
    // schedule=cosine_decay warmup-epochs=5 decay-epochs=90
    kiln.variable state @kiln.lr_schedule : tensor<5xf64> init constant value
        dense<[1.000000e-01, 0.000000e+00, -1.000000e+00, -1.000000e+00, 0.000000e+00]>
        : tensor<5xf64>
        {kiln.epochs = {total_steps = 9.000000e+01 : f64, warmup_steps = 5.000000e+00 : f64}}
    ```
  }];
  let options = [
    Option<"stepFunction", "step", "std::string", /*default=*/"\"train_step\"",
           "The training-step function">,
    Option<"optimizer", "optimizer", "::kiln::OptimizerKind",
           /*default=*/"::kiln::OptimizerKind::Sgd",
           "The optimizer",
           [{::llvm::cl::values(
             clEnumValN(::kiln::OptimizerKind::Sgd, "sgd",
                        "SGD with momentum"),
             clEnumValN(::kiln::OptimizerKind::Lars, "lars",
                        "LARS (layer-wise adaptive rate scaling)"))}]>,
    Option<"momentum", "momentum", "double", /*default=*/"0.9",
           "Momentum coefficient (both optimizers)">,
    Option<"nesterov", "nesterov", "bool", /*default=*/"false",
           "Nesterov momentum (sgd)">,
    Option<"weightDecay", "weight-decay", "double", /*default=*/"0.0",
           "L2 weight decay added to the gradient">,
    Option<"noDecay", "no-decay", "std::string", /*default=*/"\"bn,bias\"",
           "Parameter kinds not decayed: bn (batch-norm scale and offset), "
           "bias (dense-layer biases), a comma-separated list of both, or "
           "none">,
    Option<"larsSkip", "lars-skip", "std::string", /*default=*/"\"bn,bias\"",
           "Parameter kinds whose LARS trust ratio is 1 (MLPerf's skip "
           "list): bn, bias, a comma-separated list of both, or none">,
    Option<"larsForm", "lars-form", "::kiln::LarsForm",
           /*default=*/"::kiln::LarsForm::Tf2",
           "The LARS update: tf2 (MLPerf TF2: v = m v + lr trust g') or "
           "v0.6 (MLPerf v0.6: v = m v + g', w -= lr trust v, the trust "
           "ratio of g')",
           [{::llvm::cl::values(
             clEnumValN(::kiln::LarsForm::Tf2, "tf2",
                        "lr * trust inside the momentum"),
             clEnumValN(::kiln::LarsForm::V0_6, "v0.6",
                        "lr * trust applied to the momentum's step"))}]>,
    Option<"larsEta", "lars-eta", "double", /*default=*/"0.001",
           "LARS trust coefficient">,
    Option<"larsEpsilon", "lars-epsilon", "double", /*default=*/"0.0",
           "LARS denominator epsilon">,
    Option<"labelSmoothing", "label-smoothing", "double", /*default=*/"0.0",
           "Label smoothing of the training loss">,
    Option<"schedule", "schedule", "::kiln::Schedule",
           /*default=*/"::kiln::Schedule::Constant",
           "The learning-rate schedule",
           [{::llvm::cl::values(
             clEnumValN(::kiln::Schedule::Constant, "constant",
                        "lr throughout"),
             clEnumValN(::kiln::Schedule::LinearWarmupLinearDecay,
                        "linear_warmup_linear_decay",
                        "lr to peak-lr, then to 0 at total-steps"),
             clEnumValN(::kiln::Schedule::WarmupPolynomialDecay,
                        "warmup_polynomial_decay",
                        "warmup to lr, then polynomial decay to end-lr"),
             clEnumValN(::kiln::Schedule::StepDecay, "step_decay",
                        "warmup to lr, then times factor at each boundary"),
             clEnumValN(::kiln::Schedule::CosineDecay, "cosine_decay",
                        "warmup to lr, then cosine decay to end-lr"))}]>,
    Option<"lr", "lr", "double", /*default=*/"0.1",
           "Base learning rate (the initial one for linear_warmup_linear_decay)">,
    Option<"peakLr", "peak-lr", "double", /*default=*/"0.0",
           "Peak learning rate after warmup (linear_warmup_linear_decay)">,
    Option<"warmupInitLr", "warmup-init-lr", "double", /*default=*/"0.0",
           "Learning rate at step 0 of a warmup (step_decay, cosine_decay)">,
    Option<"warmupSteps", "warmup-steps", "double", /*default=*/"0",
           "Steps of linear warmup, possibly fractional">,
    Option<"warmupEpochs", "warmup-epochs", "double", /*default=*/"0.0",
           "Epochs of linear warmup, resolved into steps by the runtime "
           "(instead of warmup-steps)">,
    Option<"totalSteps", "total-steps", "int64_t", /*default=*/"0",
           "The step at which a decaying schedule reaches its final value, "
           "usually the run's length (0 with no decay-epochs: the run's "
           "length, filled in by the runtime)">,
    Option<"decayEpochs", "decay-epochs", "double", /*default=*/"0.0",
           "The decay horizon in epochs, resolved into total-steps by the "
           "runtime (instead of total-steps)">,
    Option<"endLr", "end-lr", "double", /*default=*/"0.0",
           "Final learning rate (polynomial and cosine decay)">,
    Option<"power", "power", "double", /*default=*/"2.0",
           "Power of warmup_polynomial_decay">,
    Option<"factor", "factor", "double", /*default=*/"0.1",
           "Multiplier at each step_decay boundary">,
    ListOption<"boundaries", "boundaries", "int64_t",
               "Steps at which step_decay multiplies by factor "
               "(comma-separated)">,
    ListOption<"boundaryEpochs", "boundary-epochs", "double",
               "Epochs at which step_decay multiplies by factor, resolved "
               "into steps by the runtime (comma-separated; instead of "
               "boundaries)">
  ];
}

//===----------------------------------------------------------------------===//
// Fusion
//===----------------------------------------------------------------------===//

def KilnFuse : Pass<"kiln-fuse", "mlir::func::FuncOp"> {
  let summary = "Fuses batch norm with relu and convolutions, elementwise chains and optimizer updates";
  let description = [{
    Run on the training and evaluation steps (after autodiff and the
    optimizer), in three rounds:

    1. A relu that alone consumes a batch norm's output becomes the batch
       norm's `relu` flag; before that, an add that alone consumes a
       training batch norm's output becomes its `residual` (when the other
       addend is defined before the batch norm). A relu-backward that alone feeds a
       batch-norm backward, masking with relu(batch_norm_train(x)) of the
       same x and statistics, becomes its `relu_offset` (the mask is
       recomputed from x, so the forward output is not read); a dense
       layer's weight gradient (`kiln.matmul` with `transpose_lhs`) and bias
       gradient (`kiln.reduce_sum`) of one output gradient become one
       `kiln.fused_dense_backward_weights`. Then, in the
       evaluation step, a convolution whose only user is an inference batch
       norm becomes `kiln.fused_conv2d_batch_norm` with it, taking in a
       residual add and a relu that alone consume its result. With
       `conv-batch-norm-train` (off by default), in the training step a
       convolution whose x86 kernel takes its output's statistics and whose
       output a training batch norm reads becomes
       `kiln.fused_conv2d_batch_norm_train` with that batch norm, and the
       batch norm's statistics pass disappears. Grouped convolutions and
       convolutions with a bias do not fuse with batch norm. Last in the
       round, a `kiln.bias_add` that alone consumes a convolution's output
       becomes the convolution's `bias` operand (its f32 value, before a
       bf16 step's cast).
    2. Chains of ops implementing `ElementwiseOpInterface` (a residual add
       and its relu; a gradient sum and the relu mask after it; casts)
       become one `kiln.fused_elementwise`. A value of the chain used
       elsewhere is yielded as well, and a chain stops where that use comes
       before the chain's end.
    3. The `kiln.sgd_update`s sharing learning rate, momentum, weight decay
       and nesterov become one `kiln.fused_sgd_update` at the last of them;
       updates whose new weight is cast to a bf16 copy
       (`--kiln-bf16-weight-copies`) form their own group, whose fused
       update writes the copies. LARS updates stay per parameter (their
       trust ratio needs each parameter's norms first); a cast of one's new
       weight becomes its `copy` result.

    Rounds 1 and 2 each remove a pass over the activations (a write and a
    read) per fusion; round 3 runs all updates as one kernel instead of one
    small loop per parameter. kiln-run executes the fused ops, with the same
    results to the bit, except the fused convolution and a batch norm with
    a residual, which do not round their intermediate values to bf16, and a
    batch-norm backward's recomputed mask, which can differ where the
    normalized value is within rounding of 0. The convolution fusion and
    rounds 2 and 3 can be switched off (to measure what each buys).
  }];
  let options = [
    Option<"convBatchNorm", "conv-batch-norm", "bool", /*default=*/"true",
           "Fuse inference batch norm, residual add and relu into convolutions (in round 1)">,
    Option<"convBatchNormTrain", "conv-batch-norm-train", "bool", /*default=*/"false",
           "Fuse training batch norms into the convolutions whose x86 kernel takes the statistics (round 1; off: no measurable gain yet)">,
    Option<"elementwiseChains", "elementwise-chains", "bool", /*default=*/"true",
           "Fuse chains of elementwise ops (round 2)">,
    Option<"optimizerUpdates", "optimizer-updates", "bool", /*default=*/"true",
           "Fuse SGD updates sharing their hyperparameters (round 3)">
  ];
}

//===----------------------------------------------------------------------===//
// Layout
//===----------------------------------------------------------------------===//

def KilnLayout : Pass<"kiln-layout", "mlir::func::FuncOp"> {
  let summary = "Chooses NHWC or nChw16c storage per op and inserts the reorders";
  let description = [{
    For the x86 backend, after fusion: every op implementing
    `LayoutOpInterface` gets the layout it computes in (`kiln.layout`, NHWC
    when absent), and a `kiln.reorder` goes before the first op reading a
    value in another layout than it is stored in. oneDNN's convolutions fall
    back to reference code when their activations disagree, so each op has
    one layout for all its activations; layouts therefore propagate through
    batch norm, ReLU, adds and pooling, forward and backward, and change only
    where a reorder pays for itself.

    `mode=auto` minimizes the estimated step time: each convolution's time
    in each layout (`LayoutCostOpInterface`, from measured oneDNN ratios,
    which the x86 target attaches) plus one reorder per value whose
    producer and reader disagree, solved exactly as a minimum cut.
    `mode=blocked` blocks every op that can be (all its activations with a
    multiple of 16 channels); `mode=nhwc` changes nothing. Ops without the interface read and write NHWC.
  }];
  let options = [
    Option<"mode", "mode", "::kiln::LayoutMode",
           /*default=*/"::kiln::LayoutMode::Auto",
           "How each op's layout is chosen",
           [{::llvm::cl::values(
             clEnumValN(::kiln::LayoutMode::Auto, "auto",
                        "the layouts of least estimated time"),
             clEnumValN(::kiln::LayoutMode::Nhwc, "nhwc", "NHWC everywhere"),
             clEnumValN(::kiln::LayoutMode::Blocked, "blocked",
                        "nChw16c wherever an op can compute in it"))}]>
  ];
}

//===----------------------------------------------------------------------===//
// Precision
//===----------------------------------------------------------------------===//

def KilnBf16 : Pass<"kiln-bf16", "mlir::ModuleOp"> {
  let summary = "Mixed precision: bf16 convolutions and dense layers, f32 elsewhere";
  let description = [{
    Applies each op's bf16 policy (PrecisionOpInterface) to every function:
    convolutions and dense layers read bf16 activations and weights (the
    library accumulates in f32), ops that follow their input run in bf16
    when it arrives in bf16, the loss and softmax run in f32. Weights,
    batch-norm parameters and statistics stay f32 variables (the master
    weights the optimizer updates); each compute op reads a bf16 cast of
    them. An input used only in bf16 becomes a bf16 input, so the input
    pipeline delivers bf16 directly. Run it before `--kiln-autodiff`: the
    gradients then flow through the casts.
  }];
}

def KilnBf16WeightCopies : Pass<"kiln-bf16-weight-copies", "mlir::ModuleOp"> {
  let summary = "Keeps a bf16 copy of each master weight, updated by the optimizer";
  let description = [{
    After `--kiln-bf16`, each bf16 compute op reads a cast of an f32 master
    weight, so every step rounds every weight once per function that reads
    it. This pass declares a bf16 copy variable per such parameter
    (`@w.bf16`, initializer `copy of @w`, which the runtime fills after
    initializing or loading and leaves out of checkpoints), makes the
    functions read it instead, and makes each function that assigns `@w`
    also assign the copy the rounded new value. `--kiln-fuse` folds that
    rounding into `kiln.fused_sgd_update` (or `kiln.lars_update`'s `copy`
    result), so the cast happens in the optimizer's loop while the new
    weight is in registers. Run it after the optimizer.
  }];
}

def KilnFoldCasts : Pass<"kiln-fold-casts", "mlir::func::FuncOp"> {
  let summary = "Folds precision casts into the ops that produce them";
  let description = [{
    A bf16 filter gradient cast to f32 becomes a filter gradient produced in
    f32 directly (the library accumulates in f32), keeping the gradient's
    precision and saving a pass over memory. That changes the rounding, so
    it is this pass's pattern; the casts that are identities (to their
    input's type, or bf16 widened and rounded back) fold by `kiln.cast`'s
    folder, here as under `-canonicalize`.
  }];
}

//===----------------------------------------------------------------------===//
// Transforms
//===----------------------------------------------------------------------===//

def KilnDeriveEval : Pass<"kiln-derive-eval", "mlir::ModuleOp"> {
  let summary = "Derives the evaluation function from the forward function";
  let description = [{
    Clones the forward function into an evaluation function in which batch
    normalization uses the running statistics (`batch_norm_inference`) and
    no variable is assigned, so evaluating never changes the model.
  }];
  let options = [
    Option<"forwardFunction", "forward", "std::string", /*default=*/"\"forward\"",
           "The forward function">,
    Option<"evalFunction", "eval", "std::string", /*default=*/"\"eval_step\"",
           "The name of the evaluation function to create">
  ];
}

def KilnSpecializeBatch : Pass<"kiln-specialize-batch", "mlir::ModuleOp"> {
  let summary = "Fixes the dynamic batch dimension of every function";
  let description = [{
    Model files leave the batch dimension dynamic; a compiled training step
    has a fixed batch. Every dynamic dimension (kiln only allows the batch to
    be dynamic) of every function's arguments, results and values becomes
    `batch`, and the result is verified again.
  }];
  let options = [
    Option<"batch", "batch", "int64_t", /*default=*/"0", "The batch size">
  ];
}

//===----------------------------------------------------------------------===//
// Conversion
//===----------------------------------------------------------------------===//

def KilnLowerToLinalg : Pass<"kiln-lower-to-linalg", "mlir::ModuleOp"> {
  let summary = "Lowers training and evaluation steps to loops and runtime calls over one arena";
  let description = [{
    The x86 lowering. Plans the memory of `@train_step` and `@eval_step`
    statically (variables in a persistent region, every other value at a
    fixed scratch offset reused once dead) and rewrites them into
    `@kiln_model_train_step(ctx, arena)` and `@kiln_model_eval_step(ctx,
    arena)`: convolutions and matrix products become calls of runtime
    kernels (oneDNN), everything else linalg and scf loops over views of the
    arena, allreduce buckets start/wait calls. The manifest the runtime
    needs (docs/model-abi.md) is attached to the module as `kiln.manifest`.
    Shapes must be static (`--kiln-specialize-batch`).
  }];
  let dependentDialects = [
    "mlir::arith::ArithDialect", "mlir::linalg::LinalgDialect",
    "mlir::LLVM::LLVMDialect", "mlir::math::MathDialect",
    "mlir::memref::MemRefDialect", "mlir::scf::SCFDialect",
    "mlir::vector::VectorDialect"
  ];
}

def KilnConvertToSa : Pass<"kiln-convert-to-sa", "mlir::ModuleOp"> {
  let summary = "Lowers a training step to the systolic-array target (sa dialect)";
  let description = [{
    Replaces the module's contents with one `sa.program`: the training step
    `step` (static shapes: run `--kiln-specialize-batch` first) tiled onto
    the target's matrix units, vector unit and DMA engines, with the model
    variables as HBM buffers bound by name. Convolutions (forward, backward
    data, backward filter) and matrix products run on the matrix units with
    operands rounded to bf16 and fp32 accumulation; everything else on the
    vector unit in fp32. Temporaries stay on chip when they fit, else they
    are spilled to HBM. docs/systolic.md describes the tiling.

    The f32 training step is accepted as is and the bf16 policy is applied
    by the matrix unit; once `--kiln-bf16` exists this pass should take its
    output (bf16 activations then come from the IR, not from
    `activation-type`).
  }];
  let options = [
    Option<"step", "step", "std::string", /*default=*/"\"train_step\"",
           "The training-step function">,
    Option<"profile", "profile", "std::string", /*default=*/"\"tpuv3\"",
           "Target profile: tpuv3, tpuv2 or tpuv1">,
    Option<"activationType", "activation-type",
           "::kiln::sa::ActivationStorage",
           /*default=*/"::kiln::sa::ActivationStorage::F32",
           "Storage type of activations and their gradients: f32, or bf16 "
           "(as the MLPerf TPU runs store them)",
           [{::llvm::cl::values(
             clEnumValN(::kiln::sa::ActivationStorage::F32, "f32", "f32"),
             clEnumValN(::kiln::sa::ActivationStorage::BF16, "bf16",
                        "bf16"))}]>,
    Option<"spaceToDepthStem", "space-to-depth-stem", "bool",
           /*default=*/"false",
           "Lower a 7x7/2 stem convolution on 3 channels as a 4x4/1 "
           "convolution on a space-to-depth input (the host relays images)">,
    Option<"residentFraction", "resident-fraction", "double",
           /*default=*/"0.25",
           "Fraction of on-chip memory for temporaries kept on chip">,
    Option<"packTaps", "pack-taps", "bool", /*default=*/"true",
           "Fold several filter taps into one weight tile when a layer has "
           "fewer input channels than the array has rows">,
    Option<"fuse", "fuse", "bool", /*default=*/"true",
           "Fuse batch norm with the convolution before it (statistics in "
           "its epilogue), the relu and residual add after it, and "
           "relu-backward into batch-norm backward (--kiln-fuse's patterns), "
           "so the vector unit works on tiles while they are on chip">
  ];
  let dependentDialects = ["::kiln::sa::SaDialect"];
}

def KilnOutlineParallelLoops : Pass<"kiln-outline-parallel-loops", "mlir::ModuleOp"> {
  let summary = "Runs the loops of compiled steps as kernels, the parallel ones on the thread pool";
  let description = [{
    Each top-level `scf.parallel` of a `kiln_model_*` function with constant
    bounds, step 1 and at least `min-elements` iterations in all (nested
    serial loops included) becomes a private kernel
    `(arena, begin, end, table)` that runs the loop over `[begin, end)` of its
    first dimension, and the step calls
    `kiln_rt_parallel_for(ctx, kernel, arena, begin, end, table, site)`,
    which splits the range over the threads (docs/model-abi.md). Other
    top-level loops without results become kernels called through
    `kiln_rt_serial_call(ctx, kernel, arena, table, site)`, so a step is a
    short sequence of calls. What a loop uses from the step is recomputed in
    the kernel from the arena; a loop that needs anything else (such as the
    runtime context) stays in the step. The arena offsets of the kernel's
    views come from `table`, a constant `memref.global` per call, so loops
    that differ only in their buffers' offsets share one kernel.

    `site` numbers the call. When the module has a `kiln.manifest`, the pass
    adds to it `sites` (per site: the kiln op and `file:line` taken from the
    loop's location, which `--kiln-lower-to-linalg` makes a `NameLoc` of the
    kiln op, the step function, the kernel, parallel or not) and
    `call_sites` (the same for each `kiln_rt_kernel_call` id), which the
    runtime's `--profile` reads to attribute time to the model.
  }];
  let options = [
    Option<"minElements", "min-elements", "int64_t", /*default=*/"4096",
           "Smallest iteration count worth running in parallel">
  ];
  let dependentDialects = ["mlir::func::FuncDialect", "mlir::LLVM::LLVMDialect"];
}

//===----------------------------------------------------------------------===//
// Analysis
//===----------------------------------------------------------------------===//

def KilnModelStats : Pass<"kiln-model-stats", "mlir::ModuleOp"> {
  let summary = "Prints a model's parameter count and multiply-adds per example";
  let description = [{
    Counts the elements of every `parameter` variable (and, separately, of the
    `state` variables), and sums the multiply-adds of every op implementing
    `CostOpInterface` in each function. A dynamic batch dimension is counted
    as 1, so a model file reports its cost per example; a function with a
    static batch reports per step and per example. The numbers follow the
    published convention (convolutions and dense layers), so ResNet-50 v1.5
    reports 25,557,032 parameters and 4.09 G multiply-adds per 224x224 image.
    After `--kiln-layout` it also counts the ops computing in nChw16c and the
    `kiln.reorder`s with the bytes they copy per example. Changes nothing.
  }];
  let options = [
    Option<"perOp", "per-op", "bool", /*default=*/"false",
           "Also list the multiply-adds of every counted op">
  ];
}

#endif // KILN_PASSES_PASSES_TD
