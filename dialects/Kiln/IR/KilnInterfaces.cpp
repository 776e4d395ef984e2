//===- KilnInterfaces.cpp - Per-op knowledge of kiln ops ------------------===//

#include "dialects/Kiln/IR/KilnInterfaces.h"

#include "dialects/Kiln/IR/KilnInterfaces.cpp.inc"
