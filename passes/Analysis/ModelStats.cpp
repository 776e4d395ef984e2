//===- ModelStats.cpp - Parameter and cost counts of a model --------------===//

#include "passes/Analysis/ModelStats.h"

#include "dialects/Kiln/IR/KilnLayout.h"
#include "dialects/Kiln/IR/KilnOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/Support/Format.h"

#include <optional>

using namespace mlir;

namespace kiln {

std::string formatThousands(int64_t value) {
  std::string digits = std::to_string(value < 0 ? -value : value);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0)
      out += ',';
    out += digits[i];
  }
  return value < 0 ? "-" + out : out;
}

/// The batch a function is counted at: the leading dimension of its first
/// ranked input when static, none when dynamic (counted at one example).
static std::optional<int64_t> countedBatch(func::FuncOp func) {
  for (Type type : func.getArgumentTypes())
    if (auto ranked = dyn_cast<RankedTensorType>(type);
        ranked && ranked.getRank() > 0)
      return ShapedType::isDynamic(ranked.getDimSize(0))
                 ? std::nullopt
                 : std::optional<int64_t>(ranked.getDimSize(0));
  return 1;
}

ModelStats computeModelStats(ModuleOp module) {
  ModelStats stats;
  for (auto variable : module.getOps<VariableOp>()) {
    int64_t elements = variable.getTensorType().getNumElements();
    if (variable.isParameter()) {
      stats.parameterElements += elements;
      ++stats.parameterTensors;
    } else {
      stats.stateElements += elements;
      ++stats.stateTensors;
    }
  }
  for (auto func : module.getOps<func::FuncOp>()) {
    FunctionCost cost;
    cost.name = func.getSymName().str();
    std::optional<int64_t> batch = countedBatch(func);
    cost.dynamicBatch = !batch;
    cost.batch = batch.value_or(1);
    func.walk([&](CostOpInterface op) {
      int64_t macs = op.getMultiplyAdds(/*dynamicDimSize=*/1);
      cost.multiplyAdds += macs;
      if (op->hasTrait<OpTrait::BackwardOp>())
        cost.backwardMultiplyAdds += macs;
      cost.multiplyAddsByOp[op->getName().getStringRef()] += macs;
    });
    func.walk([&](Operation *op) {
      if (isa<LayoutOpInterface>(op) &&
          getComputeLayout(op) == Layout::NChw16c)
        ++cost.blockedOps;
      if (auto reorder = dyn_cast<ReorderOp>(op)) {
        if (isStorageNoOp(reorder)) {
          ++cost.storageNoOpReorders;
          return;
        }
        auto type = reorder.getType();
        int64_t perExample = type.getElementTypeBitWidth() / 8;
        for (int64_t d : type.getShape().drop_front())
          perExample *= d;
        ++cost.reorders;
        cost.reorderBytes += perExample;
      }
    });
    stats.functions.push_back(std::move(cost));
  }
  return stats;
}

void printModelStats(const ModelStats &stats, llvm::raw_ostream &os,
                     bool perOp) {
  os << "parameters: " << formatThousands(stats.parameterElements) << " in "
     << stats.parameterTensors << " tensors\n";
  os << "state: " << formatThousands(stats.stateElements) << " elements in "
     << stats.stateTensors << " tensors\n";
  for (const FunctionCost &cost : stats.functions) {
    double perExample = double(cost.multiplyAdds) / double(cost.batch);
    // A dynamic batch (kilnc's stats come before --batch is applied) has no
    // per-step figure: saying "batch 1" there read as the compiled batch.
    if (cost.dynamicBatch) {
      os << "function @" << cost.name << " (dynamic batch)\n";
    } else {
      os << "function @" << cost.name << " (batch " << cost.batch << ")\n";
      os << "  multiply-adds per step: " << formatThousands(cost.multiplyAdds)
         << "\n";
    }
    os << "  multiply-adds per example: "
       << formatThousands(int64_t(perExample)) << " ("
       << llvm::format("%.2f", perExample / 1e9) << " G)\n";
    if (cost.backwardMultiplyAdds > 0) {
      double backward = double(cost.backwardMultiplyAdds) / double(cost.batch);
      double forward = perExample - backward;
      os << "    forward: " << formatThousands(int64_t(forward)) << " ("
         << llvm::format("%.2f", forward / 1e9) << " G)\n";
      os << "    backward: " << formatThousands(int64_t(backward)) << " ("
         << llvm::format("%.2f", backward / 1e9) << " G, "
         << llvm::format("%.2f", forward > 0 ? backward / forward : 0.0)
         << "x forward)\n";
    }
    if (cost.blockedOps > 0 || cost.reorders > 0 ||
        cost.storageNoOpReorders > 0) {
      os << "  layouts: " << cost.blockedOps << " ops in nChw16c, "
         << cost.reorders << " reorders ("
         << llvm::format("%.2f", double(cost.reorderBytes) / (1 << 20))
         << " MiB per example)";
      if (cost.storageNoOpReorders > 0)
        os << ", " << cost.storageNoOpReorders << " in place (16 channels)";
      os << "\n";
    }
    if (perOp)
      for (auto [name, macs] : cost.multiplyAddsByOp)
        os << "    " << name << ": " << formatThousands(macs) << "\n";
  }
}

} // namespace kiln
