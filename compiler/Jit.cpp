//===- Jit.cpp - Lowered tfm code run in-process ----------------*- C++ -*-===//

#include "compiler/Jit.h"
#include "passes/Pipelines.h"
#include "tfm/abi/OneDnnAbi.h"

#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/OpenMP/OpenMPToLLVMIRTranslation.h"

using namespace mlir;

extern "C" void memrefCopy(int64_t, void *,
                           void *); // runtime/src/MemrefCopy.cpp

DialectRegistry tfm::jitRegistry() {
  DialectRegistry registry;
  registerCodegenDialects(registry);
  registerBuiltinDialectTranslation(registry);
  registerLLVMDialectTranslation(registry);
  registerOpenMPDialectTranslation(registry);
  return registry;
}

llvm::Expected<std::unique_ptr<ExecutionEngine>>
tfm::createJit(ModuleOp module, const ExecutionEngineOptions &options) {
  auto engine = ExecutionEngine::create(module, options);
  if (!engine)
    return engine.takeError();
  (*engine)->registerSymbols([](llvm::orc::MangleAndInterner interner) {
    llvm::orc::SymbolMap map;
    auto add = [&](const char *name, auto *fn) {
      map[interner(name)] = {llvm::orc::ExecutorAddr::fromPtr(fn),
                             llvm::JITSymbolFlags::Exported};
    };
    add("memrefCopy", &memrefCopy);
    tfm_runtime::onednn::forEachKernel(add);
    return map;
  });
  return std::move(*engine);
}
