//===- Import.cpp - tfmc import: a checkpoint as tfm IR ---------*- C++ -*-===//
//
//   tfmc import MODEL_DIR [-o model.mlir] [--summary]
//
// Reads a checkpoint of one of the families and prints it as `tfm` IR in
// primitive form, or an overview of it.
//
//===----------------------------------------------------------------------===//

#include "tools/tfmc/Commands.h"
#include "tools/tfmc/Driver.h"

#include "compiler/Importer.h"
#include "passes/PassStatistics.h"

#include "mlir/IR/MLIRContext.h"

using namespace llvm;
using namespace tfmc;

cl::opt<bool>
    tfmc::summary("summary",
                  cl::desc("import: print an overview instead of the IR"),
                  cl::cat(tfmcCategory()));

int tfmc::runImport() {
  if (int rc = checkModelOptions())
    return rc;
  mlir::MLIRContext context(codegenRegistry());
  Expected<mlir::OwningOpRef<mlir::ModuleOp>> module =
      loadModel(context, "import");
  if (!module)
    return reportError(toString(module.takeError()));
  if (summary)
    return writeOutput(filesRead(), [&](raw_ostream &os) {
      mlir::tfm::printModelSummary(**module, os);
    });
  if (int rc = refuseTranslatorOptions())
    return rc;
  if (passStatistics)
    mlir::tfm::printPassStatistics(errs());
  return writeModule(**module);
}
