//===- Variables.cpp - Model variables: initialize, load, save -----------===//

#include "compiler/Interpreter/Interpreter.h"

#include "dialects/Kiln/IR/InitialValue.h"
#include "dialects/Kiln/IR/KilnOps.h"
#include "kiln/ref/bf16.h"
#include "kiln/ref/init.h"
#include "kiln/rt/safetensors.h"

#include <set>

using namespace mlir;

namespace kiln::interp {

namespace st = rt::safetensors;

FailureOr<VariableStore> VariableStore::declare(ModuleOp module) {
  VariableStore store;
  store.module = module;
  for (auto variable : module.getOps<VariableOp>()) {
    RankedTensorType type = variable.getTensorType();
    FailureOr<DType> element = getElementType(type);
    if (failed(element))
      return variable.emitOpError("has element type ")
             << type.getElementType()
             << ", which kiln-run does not hold (f32, bf16, f64, i32, i64)";
    store.decls.push_back(variable);
    store.values[variable.getSymName()] = HostTensor::zeros(
        *element, ref::Shape(type.getShape().begin(), type.getShape().end()));
  }
  return store;
}

HostTensor *VariableStore::lookup(StringRef name) {
  auto it = values.find(name);
  return it == values.end() ? nullptr : &it->second;
}

const HostTensor *VariableStore::lookup(StringRef name) const {
  auto it = values.find(name);
  return it == values.end() ? nullptr : &it->second;
}

/// Whether `op` is derived state (`init copy`): neither initialized nor
/// loaded nor saved, but recomputed from its source.
static bool isCopy(Operation *op) {
  return cast<VariableOp>(op).getInit() == Initializer::Copy;
}

void VariableStore::refreshCopies() {
  for (Operation *op : decls) {
    if (!isCopy(op))
      continue;
    auto copy = cast<VariableOp>(op);
    HostTensor &value = values[copy.getSymName()];
    const HostTensor &source = values[copy.getOfAttr().getValue()];
    // HostTensor holds bf16 as floats, rounded; widening is exact.
    value.floats = source.floats;
    if (value.type == DType::BF16)
      for (float &f : value.floats)
        f = ref::roundToBf16(f);
  }
}

LogicalResult VariableStore::initialize(uint64_t seed) {
  for (Operation *op : decls) {
    auto variable = cast<VariableOp>(op);
    HostTensor &value = values[variable.getSymName()];
    Initializer init = variable.getInit();
    if (init == Initializer::Copy)
      continue;
    if (init == Initializer::Constant) {
      // A dense_resource says why it has no values (elided when printed).
      if (isa<DenseResourceElementsAttr>(*variable.getValue()))
        if (llvm::Expected<ArrayRef<char>> bytes =
                getInitialValueBytes(*variable.getValue());
            !bytes)
          return variable.emitOpError("has a constant initializer kiln-run "
                                      "cannot read: ")
                 << llvm::toString(bytes.takeError());
      FailureOr<HostTensor> constant = tensorFromAttr(*variable.getValue());
      if (failed(constant) || constant->type != value.type)
        return variable.emitOpError(
            "has a constant initializer kiln-run cannot read (it needs a "
            "dense value of the variable's type)");
      value = std::move(*constant);
      continue;
    }
    if (init == Initializer::Zeros || init == Initializer::Ones) {
      double fill = init == Initializer::Ones ? 1.0 : 0.0;
      std::fill(value.floats.begin(), value.floats.end(), fill);
      std::fill(value.doubles.begin(), value.doubles.end(), fill);
      std::fill(value.ints.begin(), value.ints.end(),
                static_cast<int64_t>(fill));
      continue;
    }
    // Random initializers: float variables only (the verifier allows them
    // on any tensor).
    if (!isFloat(value.type))
      return variable.emitOpError("has a random initializer, which kiln-run "
                                  "supports for f32 and bf16 variables only");
    if (value.numElements() == 0)
      continue;
    ref::Tensor t(value.shape);
    if (init == Initializer::HeNormal)
      ref::fillHeNormal(t, seed, variable.getSymName());
    else
      ref::fillNormal(t, variable.getStd()->convertToFloat(), seed,
                      variable.getSymName());
    if (value.type == DType::BF16)
      t = ref::roundToBf16(t);
    value.floats = std::move(t.data);
  }
  refreshCopies();
  return success();
}

LogicalResult VariableStore::load(const std::string &path) {
  st::File file;
  if (Status s = st::read(path, file); !s.isOk())
    return module.emitError() << s.message();
  std::set<std::string> declared;
  for (Operation *op : decls) {
    if (isCopy(op))
      continue;
    auto variable = cast<VariableOp>(op);
    std::string name = variable.getSymName().str();
    declared.insert(name);
    const st::Tensor *entry = file.find(name);
    if (!entry)
      return variable.emitOpError()
             << "@" << name << " is missing from " << path;
    HostTensor loaded;
    if (Status s = fromSafetensors(*entry, loaded); !s.isOk())
      return variable.emitOpError()
             << "@" << name << " in " << path << ": " << s.message();
    HostTensor &value = values[name];
    if (loaded.type != value.type || loaded.shape != value.shape)
      return variable.emitOpError()
             << "@" << name << " is tensor<" << typeString(value) << "> but "
             << path << " holds tensor<" << typeString(loaded) << ">";
    value = std::move(loaded);
  }
  for (const st::Tensor &t : file.tensors)
    if (!declared.count(t.name))
      return module.emitError() << path << " holds '" << t.name
                                << "', which is not a variable of the module";
  refreshCopies();
  return success();
}

LogicalResult VariableStore::save(const std::string &path) const {
  st::File file;
  for (Operation *op : decls) {
    if (isCopy(op))
      continue;
    StringRef name = cast<VariableOp>(op).getSymName();
    file.tensors.push_back(toSafetensors(*lookup(name), name.str()));
  }
  file.metadata["format"] = "kiln-variables";
  if (Status s = st::write(path, file); !s.isOk())
    return mlir::emitError(module->getLoc()) << s.message();
  return success();
}

} // namespace kiln::interp
