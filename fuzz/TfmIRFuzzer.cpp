//===- TfmIRFuzzer.cpp - Fuzz tfm IR parsing and verification ---*- C++ -*-===//
//
// Input: a module in MLIR's textual form using the tfm dialect and the
// upstream dialects its tests use. Parsing and verifying must end in a
// diagnostic or a module, never a crash; a verified module must print.
// The dialect's parsers, printers and verifiers are compiled into this
// target with coverage.
//
//===----------------------------------------------------------------------===//

#include "dialects/Tfm/IR/TfmDialect.h"
#include "fuzz/FuzzUtil.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"

#include "llvm/Support/raw_ostream.h"

#include <memory>

using namespace mlir;

static std::unique_ptr<MLIRContext> makeContext() {
  DialectRegistry registry;
  registry.insert<tfm::TfmDialect, func::FuncDialect, arith::ArithDialect,
                  tensor::TensorDialect, math::MathDialect, scf::SCFDialect>();
  auto context =
      std::make_unique<MLIRContext>(registry, MLIRContext::Threading::DISABLED);
  context->loadAllAvailableDialects();
  return context;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  // A context keeps every type and attribute it ever saw: start afresh now
  // and then so that memory stays flat over millions of inputs.
  static std::unique_ptr<MLIRContext> context;
  static unsigned uses = 0;
  if (!context || ++uses % 2000 == 0)
    context = makeContext();
  // MLIR's lexer stops at the NUL that follows a file read into a
  // MemoryBuffer (what tfm-opt parses); libFuzzer's bytes have none.
  std::string text(reinterpret_cast<const char *>(data), size);
  size_t diagnostics = 0;
  ScopedDiagnosticHandler handler(context.get(), [&](Diagnostic &diag) {
    ++diagnostics;
    if (tfm_fuzz::verbose())
      llvm::errs() << diag.str() << "\n";
    return success();
  });
  OwningOpRef<ModuleOp> module =
      parseSourceString<ModuleOp>(text, ParserConfig(context.get()));
  if (!module) {
    TFM_FUZZ_CHECK(diagnostics > 0); // a failure always says why
    return 0;
  }
  if (failed(verify(*module))) {
    TFM_FUZZ_CHECK(diagnostics > 0);
    return 0;
  }
  std::string printed;
  llvm::raw_string_ostream os(printed);
  module->print(os);
  return 0;
}
