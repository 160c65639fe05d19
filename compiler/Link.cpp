//===- Link.cpp - A translator linked from the model's objects --*- C++ -*-===//
//
// TFM_RUNTIME_LIB_DIR, TFM_LIBOMP_DIR and TFM_SENTENCEPIECE_LIB come from
// the build (compiler/CMakeLists.txt): where the runtime's libraries are
// built, LLVM's OpenMP runtime and SentencePiece.
//
//===----------------------------------------------------------------------===//

#include "compiler/Link.h"
#include "compiler/Support.h"

#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"

using namespace llvm;
using mlir::tfm::fail;

/// Where the runtime libraries are: beside an installed tfmc (bin/../lib),
/// else in the build tree tfmc came from.
static std::string runtimeLibDir() {
  std::string self = sys::fs::getMainExecutable(nullptr, nullptr);
  SmallString<256> dir(sys::path::parent_path(sys::path::parent_path(self)));
  sys::path::append(dir, "lib");
  SmallString<256> probe(dir);
  sys::path::append(probe, "libtfm_runtime.a");
  if (sys::fs::exists(probe))
    return dir.str().str();
  return TFM_RUNTIME_LIB_DIR;
}

bool mlir::tfm::callsOneDnn(ModuleOp module) {
  bool calls = false;
  module.walk([&](SymbolOpInterface symbol) {
    calls |= symbol.getName().contains("tfm_onednn_");
  });
  return calls;
}

/// The linker's arguments after the objects: the runtime and what it
/// needs.
static void appendLibraries(SmallVectorImpl<std::string> &args, bool withOneDnn,
                            mlir::tfm::LinkedOutput kind) {
  std::string libs = runtimeLibDir();
  std::string runtimeLib = libs + "/libtfm_runtime.a";
  if (kind == mlir::tfm::LinkedOutput::SharedLibrary)
    // All of the runtime, bound to itself: two models loaded in one process
    // keep their own code.
    args.append({"-shared", "-Wl,-Bsymbolic", "-Wl,--whole-archive", runtimeLib,
                 "-Wl,--no-whole-archive"});
  else
    args.append({libs + "/libtfm_translator_main.a", runtimeLib});
  if (withOneDnn)
    args.push_back(libs + "/libtfm_onednn.a");
  // Parallel loops run on LLVM's OpenMP runtime (Debian's libomp5-19).
  // libomp before libdnnl: oneDNN's OpenMP calls (GOMP_parallel, ...) then
  // bind to the one OpenMP runtime of the process, not to libgomp.
  args.append({std::string("-L") + TFM_LIBOMP_DIR,
               std::string("-Wl,-rpath,") + TFM_LIBOMP_DIR, "-lomp"});
  if (withOneDnn)
    args.push_back("-ldnnl");
  // The runtime's text I/O needs SentencePiece (a shared library), its
  // search glibc's vector math (libmvec).
  args.append({"-lmvec", "-lm", "-lpthread", TFM_SENTENCEPIECE_LIB});
  // The translator's --source-lang auto detects languages with CLD2
  // (Debian's libcld2-0), its --format html parses with Gumbo (libgumbo1);
  // a shared library needs neither.
  if (kind != mlir::tfm::LinkedOutput::SharedLibrary)
    args.append({"-lcld2", "-lgumbo"});
#ifdef TFM_SANITIZE_TRANSLATORS
  // The runtime libraries are instrumented (TFM_SANITIZE): link the
  // sanitizers' runtimes, as CMake does for tfmc itself.
  args.append({"-fsanitize=address,undefined", "-fno-sanitize-recover=all"});
#endif
}

Error mlir::tfm::linkTranslator(ArrayRef<std::string> objectPaths,
                                StringRef outputPath, bool withOneDnn,
                                LinkedOutput kind) {
  ErrorOr<std::string> linker = sys::findProgramByName("clang++-19");
  if (!linker)
    linker = sys::findProgramByName("c++");
  if (!linker)
    return fail("no C++ linker driver (clang++-19 or c++) on PATH");
  SmallVector<std::string> args = {*linker, "-o", outputPath.str()};
  args.append(objectPaths.begin(), objectPaths.end());
  appendLibraries(args, withOneDnn, kind);
  SmallVector<StringRef> argRefs(args.begin(), args.end());
  std::string errorMessage;
  int rc = sys::ExecuteAndWait(*linker, argRefs, std::nullopt, {}, 0, 0,
                               &errorMessage);
  if (rc != 0)
    return fail("linking " + outputPath + " failed" +
                (errorMessage.empty() ? "" : ": " + errorMessage));
  return Error::success();
}
