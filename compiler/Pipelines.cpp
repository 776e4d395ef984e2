//===- Pipelines.cpp - Kiln's named pass pipelines ------------------------===//

#include "compiler/Pipelines.h"

#include "passes/Passes.h"

#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

namespace kiln {

void buildTrainStepPipeline(mlir::OpPassManager &pm,
                            const TrainStepPipelineOptions &options) {
  KilnAutodiffOptions autodiff;
  autodiff.forwardFunction = options.forward;
  autodiff.stepFunction = options.step;
  pm.addPass(createKilnAutodiff(autodiff));

  if (options.bucketBytes > 0) {
    KilnInsertAllReduceOptions allreduce;
    allreduce.stepFunction = options.step;
    allreduce.bucketBytes = options.bucketBytes;
    pm.addPass(createKilnInsertAllReduce(allreduce));
  }

  KilnOptimizerOptions optimizer;
  optimizer.stepFunction = options.step;
  optimizer.optimizer = options.optimizer;
  optimizer.momentum = options.momentum;
  optimizer.nesterov = options.nesterov;
  optimizer.weightDecay = options.weightDecay;
  optimizer.noDecay = options.noDecay;
  optimizer.larsSkip = options.larsSkip;
  optimizer.larsForm = options.larsForm;
  optimizer.larsEta = options.larsEta;
  optimizer.larsEpsilon = options.larsEpsilon;
  optimizer.labelSmoothing = options.labelSmoothing;
  optimizer.schedule = options.schedule;
  optimizer.lr = options.lr;
  optimizer.peakLr = options.peakLr;
  optimizer.warmupInitLr = options.warmupInitLr;
  optimizer.warmupSteps = options.warmupSteps;
  optimizer.totalSteps = options.totalSteps;
  optimizer.endLr = options.endLr;
  optimizer.power = options.power;
  optimizer.factor = options.factor;
  optimizer.boundaries.assign(options.boundaries.begin(),
                              options.boundaries.end());
  optimizer.warmupEpochs = options.warmupEpochs;
  optimizer.decayEpochs = options.decayEpochs;
  optimizer.boundaryEpochs.assign(options.boundaryEpochs.begin(),
                                  options.boundaryEpochs.end());
  pm.addPass(createKilnOptimizer(optimizer));
  pm.addPass(mlir::createCSEPass());
}

llvm::ArrayRef<Recipe> getRecipes() {
  static const Recipe kRecipes[] = {
      // tensorflow/tpu models/official/resnet/resnet_main.py (TF 1.6 era):
      // Nesterov MomentumOptimizer, L2 on every non-batch-norm variable, with
      // SURFsara/Intel's gradual_warmup_then_dec(0.1, 260, 4.8, step, 4680)
      // at global batch 24576 (256 nodes x 2 workers x 48), BN decay 0.95.
      {"surfsara-xeon", "SURFsara/Intel ResNet-50 on 512 Xeon workers",
       "optimizer=sgd nesterov=true momentum=0.9 weight-decay=5e-5 "
       "no-decay=bn schedule=linear_warmup_linear_decay lr=0.1 peak-lr=4.8 "
       "warmup-steps=260 total-steps=4680",
       48, 0.95},
      // training_results_v0.6 Google resnet (lars_util.py with
      // tf.contrib.opt.LARSOptimizer, skip_list ['batch_normalization',
      // 'bias'], L2 on every non-batch-norm variable): base LR 31.2, 25
      // warmup epochs of 1281167 / 32768 steps = 977.452850341796875 (exact
      // in binary), polynomial decay (power 2) to 1e-4 over the run,
      // momentum 0.9, weight decay 1e-4, epsilon 1e-5, label smoothing 0.1;
      // batch 32768 over 512 cores of 64.
      {"mlperf-v0.6", "MLPerf v0.6 ResNet-50 on a TPUv3-512 pod",
       "optimizer=lars lars-form=v0.6 momentum=0.9 weight-decay=1e-4 "
       "no-decay=bn lars-skip=bn,bias lars-eta=0.001 lars-epsilon=1e-5 "
       "label-smoothing=0.1 schedule=warmup_polynomial_decay lr=31.2 "
       "warmup-steps=977.452850341796875 end-lr=1e-4 power=2",
       64, 0.9},
  };
  return kRecipes;
}

const Recipe *findRecipe(llvm::StringRef name) {
  for (const Recipe &recipe : getRecipes())
    if (recipe.name == name)
      return &recipe;
  return nullptr;
}

void registerKilnPipelines() {
  mlir::PassPipelineRegistration<TrainStepPipelineOptions>(
      "kiln-build-train-step",
      "Builds the full training step from a model: autodiff, gradient "
      "allreduce buckets, optimizer and learning-rate schedule",
      buildTrainStepPipeline);
}

} // namespace kiln
