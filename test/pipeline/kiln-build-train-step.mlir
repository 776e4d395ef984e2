// The whole training step of ResNet-50 from its model file: backward costs
// about twice the forward, every parameter gets an update, and gradients
// are averaged in buckets.
// RUN: kiln-opt %kiln_src/models/resnet50.mlir \
// RUN:   --kiln-build-train-step="optimizer=lars schedule=warmup_polynomial_decay lr=31.2 warmup-steps=25 total-steps=100 label-smoothing=0.1" \
// RUN:   --kiln-model-stats -o %t.mlir | FileCheck %s --check-prefix=STATS
// RUN: FileCheck %s --input-file=%t.mlir
// RUN: grep -c kiln.lars_update %t.mlir | FileCheck %s --check-prefix=UPDATES

// STATS: function @train_step (dynamic batch)
// STATS: forward: 4,089,184,256 (4.09 G)
// STATS-NEXT: backward: 8,060,354,560 (8.06 G, 1.97x forward)
// UPDATES: 161

// CHECK: kiln.variable state @conv1.weight.momentum : tensor<7x7x3x64xf32> init zeros
// CHECK-LABEL: func.func @train_step
// CHECK-SAME: %{{.*}}: tensor<i64> {kiln.step}
// CHECK-SAME: -> (tensor<f32>, tensor<?x1000xf32>, tensor<f32> {kiln.learning_rate})
// CHECK: kiln.allreduce {{.*}} bucket 0
// CHECK: kiln.allreduce {{.*}} bucket 1
// CHECK: kiln.allreduce {{.*}} bucket 2
// CHECK: kiln.allreduce {{.*}} bucket 3
// CHECK-NOT: kiln.allreduce
// CHECK: kiln.learning_rate
