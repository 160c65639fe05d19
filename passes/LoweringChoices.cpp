//===- LoweringChoices.cpp - The precision and the backend, typed ---------===//

#include "passes/LoweringChoices.h"

#include "mlir/IR/BuiltinAttributes.h"

using namespace mlir;
using namespace mlir::tfm;

StringRef tfm::precisionName(Precision precision) {
  switch (precision) {
  case Precision::Fp32:
    return "fp32";
  case Precision::Bf16:
    return "bf16";
  case Precision::Int8:
    return "int8";
  case Precision::Int4:
    return "int4";
  }
  llvm_unreachable("a Precision has a name");
}

StringRef tfm::backendName(Backend backend) {
  switch (backend) {
  case Backend::Llvm:
    return "llvm";
  case Backend::OneDnn:
    return "onednn";
  case Backend::Auto:
    return "auto";
  }
  llvm_unreachable("a Backend has a name");
}

/// The value of `values` whose name is `name`, or an error that lists
/// the names: "unknown <option> 'x': expected a, b or c".
template <typename Enum, size_t N, typename NameFn>
static llvm::Expected<Enum> parseName(StringRef name, StringRef option,
                                      const Enum (&values)[N], NameFn nameOf) {
  for (Enum value : values)
    if (nameOf(value) == name)
      return value;
  std::string allowed;
  for (size_t i = 0; i < N; ++i)
    allowed += (i == 0       ? ""
                : i + 1 == N ? " or "
                             : ", ") +
               nameOf(values[i]).str();
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 "unknown " + option.str() + " '" + name.str() +
                                     "': expected " + allowed);
}

llvm::Expected<Precision> tfm::parsePrecision(StringRef name,
                                              StringRef option) {
  return parseName(name, option, kAllPrecisions, precisionName);
}

llvm::Expected<Backend> tfm::parseBackend(StringRef name, StringRef option) {
  return parseName(name, option, kAllBackends, backendName);
}

void tfm::setModulePrecision(ModuleOp module, Precision precision) {
  module->setAttr(kPrecisionAttr, StringAttr::get(module.getContext(),
                                                  precisionName(precision)));
}

llvm::Expected<Precision> tfm::modulePrecision(ModuleOp module) {
  auto name = module->getAttrOfType<StringAttr>(kPrecisionAttr);
  if (!name)
    return Precision::Fp32;
  return parsePrecision(name.getValue(), kPrecisionAttr);
}

void tfm::setOpBackend(Operation *op, Backend backend) {
  assert(backend != Backend::Auto && "an op is given llvm or onednn");
  op->setAttr(kBackendAttr,
              StringAttr::get(op->getContext(), backendName(backend)));
}

llvm::Expected<std::optional<Backend>> tfm::opBackend(Operation *op) {
  auto name = op->getAttrOfType<StringAttr>(kBackendAttr);
  if (!name)
    return std::nullopt;
  llvm::Expected<Backend> backend = parseBackend(name.getValue(), kBackendAttr);
  if (backend && *backend != Backend::Auto)
    return *backend;
  llvm::consumeError(backend.takeError());
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 "unknown " + kBackendAttr + " '" +
                                     name.getValue() +
                                     "': expected llvm or onednn");
}
