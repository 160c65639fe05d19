//===- tfm-run.cpp - Run one compiled tfm function --------------*- C++ -*-===//
//
//   tfm-run FILE.mlir --entry=NAME --shapes="2x4x1x16,2x4x7x16 -> 2x4x1x16"
//           [--compare-decomposed] [--rtol=1e-5] [--print]
//           [--int-max=N] [--index-value=V] [--seed=S] [--backend=B]
//           [--decompose] [--reference-backend=B]
//
// Compiles the function with the backend B (llvm, onednn, auto; the same
// lowering pipeline as tfmc), JIT-runs it on deterministic pseudo-random inputs
// of the given shapes and prints or checks its results. With
// --compare-decomposed it also compiles the function after tfm-decompose (fused
// ops spelled out in primitive ops) and checks that both give the same results
// within rtol: the numeric test of each fused kernel against the graph it
// replaces.
//
//===----------------------------------------------------------------------===//

#include "compiler/Jit.h"
#include "passes/Passes.h"
#include "passes/Pipelines.h"
#include "tfm/abi/ModelInfo.h"

#include "mlir/ExecutionEngine/ExecutionEngine.h"
#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/WithColor.h"

#include <cmath>
#include <memory>
#include <vector>

using namespace llvm;

static cl::opt<std::string> inputFile(cl::Positional, cl::Required,
                                      cl::desc("<input .mlir>"));
static cl::opt<std::string> entry("entry", cl::desc("Function to run"),
                                  cl::Required);
static cl::opt<std::string>
    shapes("shapes", cl::Required,
           cl::desc("Argument shapes then result shapes: \"AxB,C -> D\" "
                    "(scalars take an empty shape)"));
static cl::opt<bool> compareDecomposed(
    "compare-decomposed",
    cl::desc("Also run the function after tfm-decompose and compare"));
static cl::opt<std::string> referenceBackend(
    "reference-backend", cl::init("llvm"),
    cl::desc("Backend of the decomposed graph that --compare-decomposed "
             "checks against: llvm or onednn"));
static cl::opt<double> rtol("rtol", cl::init(1e-5),
                            cl::desc("Largest difference allowed, relative "
                                     "to the largest magnitude"));
static cl::opt<std::string>
    backend("backend", cl::init("llvm"),
            cl::desc("Who runs the ops oneDNN can run: llvm, onednn, auto"));
static cl::opt<bool> decomposeFirst(
    "decompose",
    cl::desc("Run the primitive graph (tfm-decompose) on the backend: with "
             "--compare-decomposed, oneDNN's matmul, softmax, ... against "
             "ours"));
static cl::opt<bool> printResults("print", cl::desc("Print the results"));
static cl::opt<int> intMax("int-max", cl::init(1),
                           cl::desc("Integer inputs are drawn from [1, N]"));
static cl::opt<int64_t> indexValue("index-value", cl::init(0),
                                   cl::desc("Value of index arguments"));
static cl::opt<unsigned> seed("seed", cl::init(1), cl::desc("Input seed"));
static cl::opt<int64_t> vectorWidth(
    "vector-width", cl::init(0),
    cl::desc("Floats per vector of the generated kernels (0: the host's); "
             "wider than the host's runs split in halves, so tests cover "
             "AVX-512 kernels on AVX2 machines too"));

namespace {
[[noreturn]] void fail(const Twine &message) {
  WithColor::error(errs(), "tfm-run") << message << "\n";
  std::exit(1);
}

std::vector<int64_t> parseShape(StringRef text) {
  std::vector<int64_t> shape;
  text = text.trim();
  if (text.empty())
    return shape;
  SmallVector<StringRef> dims;
  text.split(dims, 'x');
  for (StringRef d : dims) {
    int64_t v;
    if (d.trim().getAsInteger(10, v) || v < 0)
      fail("bad dimension '" + d + "' in --shapes");
    shape.push_back(v);
  }
  return shape;
}

std::vector<std::vector<int64_t>> parseShapes(StringRef text) {
  std::vector<std::vector<int64_t>> out;
  if (text.trim().empty())
    return out;
  SmallVector<StringRef> parts;
  text.split(parts, ',');
  for (StringRef p : parts)
    out.push_back(parseShape(p));
  return out;
}

/// A buffer plus its memref descriptor words.
struct Tensor {
  std::vector<int64_t> shape;
  std::vector<float> f32;
  std::vector<int32_t> i32;
  std::vector<int64_t> descriptor;
  void *descriptorPtr = nullptr;
  int64_t scalar = 0;
  bool isScalar = false;

  int64_t size() const { return mlir::ShapedType::getNumElements(shape); }
  void describe(void *data) {
    descriptor = tfm_runtime::memrefDescriptor(data, shape);
    descriptorPtr = descriptor.data();
  }
};

/// The backend `option` names; an unknown name fails, naming the option.
mlir::tfm::Backend backendOption(const cl::opt<std::string> &option) {
  Expected<mlir::tfm::Backend> backend =
      mlir::tfm::parseBackend(option, ("--" + option.ArgStr).str());
  if (!backend)
    fail(toString(backend.takeError()));
  return *backend;
}

/// The kernels for this host, or for --vector-width's vectors.
mlir::tfm::KernelConfig kernelConfig() {
  mlir::tfm::VectorTarget target = mlir::tfm::hostVectorTarget();
  if (vectorWidth)
    target.width = vectorWidth;
  return mlir::tfm::KernelConfig::forTarget(target);
}

/// Compiles `module` (fused or primitive tfm IR) with the kernels of
/// `kernels` to a JIT'd engine.
std::unique_ptr<mlir::ExecutionEngine>
compile(mlir::ModuleOp module, mlir::tfm::Backend backend,
        const mlir::tfm::KernelConfig &kernels) {
  mlir::PassManager pm(module.getContext());
  mlir::tfm::buildLoweringPipeline(pm, backend, /*reportBackends=*/false,
                                   kernels);
  if (failed(pm.run(module)))
    fail("lowering failed");
  auto transformer = mlir::makeOptimizingTransformer(3, 0, nullptr);
  mlir::ExecutionEngineOptions options;
  options.transformer = transformer;
  auto engine = mlir::tfm::createJit(module, options);
  if (!engine)
    fail("JIT: " + toString(engine.takeError()));
  return std::move(*engine);
}

/// Drops every function but the entry and those it calls: a test file holds
/// many functions, and each run compiles one of them, twice.
void keepOnlyEntry(mlir::ModuleOp module) {
  for (auto func : module.getOps<mlir::func::FuncOp>())
    if (func.getSymName() != entry && func.isPublic())
      func.setPrivate();
  mlir::PassManager pm(module.getContext());
  pm.addPass(mlir::createSymbolDCEPass());
  if (failed(pm.run(module)))
    fail("symbol-dce failed");
}

/// Runs the entry point on copies of `inputs`; returns the results.
std::vector<Tensor> run(mlir::ExecutionEngine &engine,
                        std::vector<Tensor> inputs,
                        const std::vector<std::vector<int64_t>> &resultShapes) {
  std::vector<Tensor> results(resultShapes.size());
  std::vector<void *> args;
  for (Tensor &t : inputs) {
    if (t.isScalar) {
      args.push_back(&t.scalar);
      continue;
    }
    t.describe(t.f32.empty() ? static_cast<void *>(t.i32.data())
                             : static_cast<void *>(t.f32.data()));
    args.push_back(&t.descriptorPtr);
  }
  for (size_t r = 0; r < results.size(); ++r) {
    results[r].shape = resultShapes[r];
    results[r].f32.assign(results[r].size(), 0.0f);
    results[r].describe(results[r].f32.data());
    args.push_back(&results[r].descriptorPtr);
  }
  if (Error err = engine.invokePacked("_mlir_ciface_" + entry, args))
    fail("running @" + entry + ": " + toString(std::move(err)));
  return results;
}
} // namespace

int main(int argc, char **argv) {
  InitLLVM init(argc, argv);
  mlir::tfm::registerAllTfmPasses();
  cl::ParseCommandLineOptions(argc, argv, "tfm-run: run one tfm function\n");
  mlir::tfm::Backend fusedBackend = backendOption(backend);
  mlir::tfm::Backend spelledBackend = backendOption(referenceBackend);
  mlir::tfm::KernelConfig kernels = kernelConfig();
  InitializeNativeTarget();
  InitializeNativeTargetAsmPrinter();

  mlir::MLIRContext context(mlir::tfm::jitRegistry());
  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlir::parseSourceFile<mlir::ModuleOp>(inputFile, &context);
  if (!module)
    fail("cannot parse " + inputFile);
  auto func = module->lookupSymbol<mlir::func::FuncOp>(entry);
  if (!func)
    fail("no function @" + entry + " in " + inputFile);

  auto [argText, resultText] = StringRef(shapes).split("->");
  auto argShapes = parseShapes(argText), resultShapes = parseShapes(resultText);
  if (argShapes.size() != func.getNumArguments() ||
      resultShapes.size() != func.getNumResults())
    fail(Twine("--shapes gives ") + Twine(argShapes.size()) +
         " arguments and " + Twine(resultShapes.size()) + " results; @" +
         entry + " has " + Twine(func.getNumArguments()) + " and " +
         Twine(func.getNumResults()));

  // Inputs: uniform in [-1, 1) for floats, [1, int-max] for integers, from
  // a fixed linear congruential sequence.
  uint64_t state = seed;
  auto next = [&] {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return double(state >> 11) / double(1ULL << 53);
  };
  std::vector<Tensor> inputs;
  for (auto [i, type] : llvm::enumerate(func.getArgumentTypes())) {
    Tensor t;
    t.shape = argShapes[i];
    if (type.isIndex()) {
      t.isScalar = true;
      t.scalar = indexValue;
    } else if (auto tensor = dyn_cast<mlir::RankedTensorType>(type)) {
      if (tensor.getRank() != int64_t(t.shape.size()))
        fail("argument " + Twine(i) + " has rank " + Twine(tensor.getRank()));
      if (tensor.getElementType().isF32())
        for (int64_t n = 0; n < t.size(); ++n)
          t.f32.push_back(float(2 * next() - 1));
      else if (tensor.getElementType().isInteger(32))
        for (int64_t n = 0; n < t.size(); ++n)
          t.i32.push_back(1 + int32_t(next() * intMax));
      else
        fail("argument " + Twine(i) + ": only f32, i32 and index inputs");
    } else {
      fail("argument " + Twine(i) + ": only tensors and index");
    }
    inputs.push_back(std::move(t));
  }

  keepOnlyEntry(*module);
  auto decompose = [&](mlir::ModuleOp m) {
    mlir::PassManager pm(&context);
    pm.addPass(mlir::tfm::createTfmDecomposePass());
    if (failed(pm.run(m)))
      fail("tfm-decompose failed");
  };
  mlir::OwningOpRef<mlir::ModuleOp> decomposed;
  if (compareDecomposed) {
    decomposed = module->clone();
    decompose(*decomposed);
  }
  if (decomposeFirst)
    decompose(*module);
  auto fused = compile(*module, fusedBackend, kernels);
  std::vector<Tensor> results = run(*fused, inputs, resultShapes);
  if (printResults)
    for (auto [r, t] : llvm::enumerate(results)) {
      outs() << "result " << r << ":";
      for (float v : t.f32)
        outs() << " " << format("%.6g", v);
      outs() << "\n";
    }
  if (!compareDecomposed)
    return 0;
  // The reference is our own code by default (a oneDNN kernel is checked
  // against the LLVM lowering of the graph it replaces); with
  // --reference-backend=onednn our fused kernels are checked against
  // oneDNN's primitives.
  auto spelled = compile(*decomposed, spelledBackend, kernels);
  std::vector<Tensor> expected = run(*spelled, inputs, resultShapes);
  bool ok = true;
  for (size_t r = 0; r < results.size(); ++r) {
    double maxDiff = 0, maxRef = 0;
    bool finite = true;
    for (int64_t n = 0; n < results[r].size(); ++n) {
      double a = results[r].f32[n], e = expected[r].f32[n];
      finite &= std::isfinite(a) && std::isfinite(e);
      maxDiff = std::max(maxDiff, std::abs(a - e));
      maxRef = std::max(maxRef, std::abs(e));
    }
    double rel = maxRef > 0 ? maxDiff / maxRef : maxDiff;
    bool pass = finite && rel <= rtol;
    ok &= pass;
    outs() << "result " << r << ": " << results[r].size()
           << " values, fused vs decomposed max difference "
           << format("%.2e", rel) << " relative (rtol "
           << format("%.0e", double(rtol)) << "): "
           << (pass     ? "ok"
               : finite ? "MISMATCH"
                        : "NOT FINITE")
           << "\n";
  }
  return ok ? 0 : 1;
}
