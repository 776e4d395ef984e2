//===- ref.h - All reference kernels ---------------------------*- C++ -*-===//
//
// Part of Kiln. Umbrella header for the reference kernels that kiln-run, the
// golden model, executes. No MLIR dependency.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_REF_REF_H
#define KILN_REF_REF_H

#include "kiln/ref/activation.h"
#include "kiln/ref/batchnorm.h"
#include "kiln/ref/bf16.h"
#include "kiln/ref/check.h"
#include "kiln/ref/conv.h"
#include "kiln/ref/dropout.h"
#include "kiln/ref/dense.h"
#include "kiln/ref/elementwise.h"
#include "kiln/ref/loss.h"
#include "kiln/ref/movement.h"
#include "kiln/ref/optimizer.h"
#include "kiln/ref/pool.h"
#include "kiln/ref/schedule.h"
#include "kiln/ref/tensor.h"

#endif // KILN_REF_REF_H
