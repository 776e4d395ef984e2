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
  optimizer.decay1d = options.decay1d;
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

void registerKilnPipelines() {
  mlir::PassPipelineRegistration<TrainStepPipelineOptions>(
      "kiln-build-train-step",
      "Builds the full training step from a model: autodiff, gradient "
      "allreduce buckets, optimizer and learning-rate schedule",
      buildTrainStepPipeline);
}

} // namespace kiln
