//===- tfm-bench.cpp - Micro-benchmarks of the model's hot shapes ---------===//
//
//   tfm-bench [--linear=MxKxN,...]
//             [--attention=encoder:S[:B],decoder:S[:B],...]
//             [--layer-norm=RxD,...] [--backends=llvm] [--num-threads=2]
//             [--precisions=fp32,bf16,int8,int4] [--min-time=0.1]
//             [--repetitions=5]
//             [--settle=0.25]
//
// Each benchmark is a tfm snippet generated for one shape, compiled by the
// JIT through the same lowering as tfmc (per backend), and timed against a
// peer in the same process:
//
//   linear      x[M, K] · W[N, K]ᵀ (tfm.linear over a tfm.weight) vs
//               OpenBLAS cblas_sgemm and a oneDNN matmul primitive
//   attention   tfm.attention (fused) vs its tfm-decompose'd graph:
//               encoder self-attention (1 x 8 heads x S x 64, key lengths)
//               and a decoder step (1 query, causal, K/V caches of S)
//   layer-norm  tfm.layer_norm with residual, γ, β (fused) vs decomposed
//
// Every engine first runs once and its outputs are compared with the peer's
// (max absolute difference; failure beyond --rtol of the largest value is
// an error, so no timing is of a wrong kernel). Then each engine is warmed
// up, and timed in --repetitions rounds that run every engine in turn for
// as many calls as fill --min-time seconds, on a monotonic clock; the figure
// is the median seconds per call. Between engines it sleeps --settle seconds
// so the previous engine's spinning worker threads (OpenMP, OpenBLAS) are
// idle. The results go to stdout as JSON.
//
// --precisions with bf16, int8 or int4: each linear also as tfmc compile
// --precision bf16 (int8, int4) builds it ("tfmc-llvm-bf16", and
// streamed), checked against the fp32 peers within --bf16-rtol
// (--int8-rtol, --int4-rtol): its weights and inputs are rounded to bf16
// (quantized to int8; int4 weights in groups). oneDNN has no int4.
//
//===----------------------------------------------------------------------===//

#include "bench/micro/Synchronization.h"
#include "bench/micro/peers/Peers.h"
#include "compiler/Jit.h"
#include "passes/Passes.h"
#include "passes/Pipelines.h"
#include "runtime/src/Heap.h"
#include "tfm/abi/ModelInfo.h"
#include "tfm/abi/Panels.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/ExecutionEngine/ExecutionEngine.h"
#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h"
#include "llvm/IR/InstIterator.h"
#include "llvm/IR/Module.h"
#include "llvm/IR/Operator.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/TargetParser/Host.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <thread>
#include <vector>

using namespace llvm;

static cl::list<std::string>
    linears("linear", cl::CommaSeparated,
            cl::desc("Linear layers MxKxN: x[M, K] · W[N, K]^T"));
static cl::list<std::string> attentions(
    "attention", cl::CommaSeparated,
    cl::desc("encoder:S (self-attention, S tokens) or decoder:S (one query "
             "against K/V caches of S), 8 heads of 64; :B after S for a "
             "batch of B sentences (default 1)"));
static cl::list<std::string>
    layerNorms("layer-norm", cl::CommaSeparated,
               cl::desc("Layer norms RxD: R rows of D, with residual"));
static cl::list<std::string> backends(
    "backends", cl::CommaSeparated,
    cl::desc("tfmc backends to compile each snippet with: llvm, onednn, "
             "auto (default: llvm)"));
static cl::list<std::string>
    precisions("precisions", cl::CommaSeparated,
               cl::desc("Precisions of our linears: fp32 (always), bf16, "
                        "int8"));
static cl::opt<double>
    bf16Rtol("bf16-rtol", cl::init(3e-2),
             cl::desc("Largest difference of a bf16 engine from the fp32 peer, "
                      "relative to the peer's largest value"));
static cl::opt<double> int8Rtol(
    "int8-rtol", cl::init(5e-2),
    cl::desc("Largest difference of an int8 engine from the fp32 peer, "
             "relative to the peer's largest value"));
static cl::opt<double> int4Rtol(
    "int4-rtol", cl::init(0.25),
    cl::desc("Largest difference of an int4 engine from the fp32 peer, "
             "relative to the peer's largest value"));
static cl::opt<bool> listBackends("list-backends",
                                  cl::desc("Print the backends and exit"));
static cl::opt<bool> noOneDnn("no-onednn",
                              cl::desc("Leave oneDNN out of the linears"));
static cl::opt<int> threads("num-threads", cl::init(2),
                            cl::desc("Threads for every engine"));
static cl::opt<double> minTime("min-time", cl::init(0.1),
                               cl::desc("Seconds per timed repetition"));
static cl::opt<int> repetitions("repetitions", cl::init(5),
                                cl::desc("Timed repetitions (median)"));
static cl::opt<double> settle("settle", cl::init(0.25),
                              cl::desc("Seconds of sleep between engines"));
static cl::list<int64_t> readBytes(
    "read-bytes", cl::CommaSeparated,
    cl::desc("Also the read bandwidth of arrays of these sizes (bytes), "
             "each read again and again: the bound of a decode step whose "
             "weights are that size"));
static cl::opt<double> rtol("rtol", cl::init(1e-4),
                            cl::desc("Largest difference from the peer "
                                     "allowed, relative to its largest value"));

namespace {
[[noreturn]] void fail(const Twine &message) {
  WithColor::error(errs(), "tfm-bench") << message << "\n";
  std::exit(1);
}

/// How the snippets are compiled: the host's kernels, --backends and
/// --precisions parsed.
struct Lowering {
  mlir::tfm::KernelConfig kernels;
  std::vector<mlir::tfm::Backend> backends;
  /// The precisions besides fp32 (which always runs), in --precisions'
  /// order.
  std::vector<mlir::tfm::Precision> narrower;
};

/// The kernels for this host; --backends (default: llvm) and --precisions
/// parsed, an unknown name failing.
Lowering chooseLowering() {
  Lowering lowering;
  lowering.kernels =
      mlir::tfm::KernelConfig::forTarget(mlir::tfm::hostVectorTarget());
  for (const std::string &name : backends) {
    Expected<mlir::tfm::Backend> backend =
        mlir::tfm::parseBackend(name, "--backends");
    if (!backend)
      fail(toString(backend.takeError()));
    lowering.backends.push_back(*backend);
  }
  if (lowering.backends.empty())
    lowering.backends.push_back(mlir::tfm::Backend::Llvm);
  for (const std::string &name : precisions) {
    Expected<mlir::tfm::Precision> precision =
        mlir::tfm::parsePrecision(name, "--precisions");
    if (!precision)
      fail(toString(precision.takeError()));
    if (*precision != mlir::tfm::Precision::Fp32)
      lowering.narrower.push_back(*precision);
  }
  return lowering;
}

/// Uniform values in [-1, 1) from a fixed linear congruential sequence.
struct Random {
  uint64_t state;
  explicit Random(uint64_t seed) : state(seed) {}
  float next() {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return float(2 * (double(state >> 11) / double(1ULL << 53)) - 1);
  }
  void fill(float *data, int64_t n) {
    for (int64_t i = 0; i < n; ++i)
      data[i] = next();
  }
};

/// 64-byte aligned floats, as the runtime allocates.
struct Buffer {
  std::unique_ptr<float, decltype(&std::free)> data{nullptr, &std::free};
  int64_t size = 0;
  explicit Buffer(int64_t n = 0) { resize(n); }
  void resize(int64_t n) {
    size = n;
    size_t bytes = (std::max<int64_t>(n, 1) * 4 + 63) / 64 * 64;
    data.reset(static_cast<float *>(std::aligned_alloc(64, bytes)));
    std::fill(data.get(), data.get() + n, 0.0f);
  }
  float *get() const { return data.get(); }
};

/// One argument or result of a snippet: a dense buffer and its descriptor.
struct Operand {
  std::vector<int64_t> shape;
  bool isInt = false;
  int32_t intValue = 0; // every element of an i32 operand
  Buffer f32;
  std::vector<int32_t> i32;
  std::vector<int64_t> descriptor;
  void *descriptorPtr = nullptr;

  int64_t elements() const { return mlir::ShapedType::getNumElements(shape); }
  void allocate(Random *random) {
    if (isInt) {
      i32.assign(elements(), intValue);
      descriptor = tfm_runtime::memrefDescriptor(i32.data(), shape);
    } else {
      f32.resize(elements());
      if (random)
        random->fill(f32.get(), elements());
      descriptor = tfm_runtime::memrefDescriptor(f32.get(), shape);
    }
    descriptorPtr = descriptor.data();
  }
};

/// A snippet: the tfm function @bench, its operands' shapes, and the work
/// one call does (for GFLOP/s or GB/s).
struct Benchmark {
  std::string kind, name;
  json::Object shape;
  std::string source;
  std::vector<Operand> args, results;
  double flops = 0, bytes = 0;
  std::string unit; // what `rate` measures: "GFLOP/s" or "GB/s"

  Benchmark() = default;
  Benchmark(Benchmark &&) = default; // not copyable: owns its buffers
  Benchmark &operator=(Benchmark &&) = default;
  double work() const { return unit == "GB/s" ? bytes : flops; }
};

Operand f32Operand(std::vector<int64_t> shape) {
  Operand o;
  o.shape = std::move(shape);
  return o;
}
Operand i32Operand(std::vector<int64_t> shape, int32_t value) {
  Operand o;
  o.shape = std::move(shape);
  o.isInt = true;
  o.intValue = value;
  return o;
}

std::vector<int64_t> parseDims(StringRef text, size_t count, StringRef flag) {
  SmallVector<StringRef> parts;
  text.split(parts, 'x');
  std::vector<int64_t> dims;
  for (StringRef p : parts) {
    int64_t v;
    if (p.trim().getAsInteger(10, v) || v <= 0)
      fail("bad size '" + p + "' in --" + flag + "=" + text);
    dims.push_back(v);
  }
  if (dims.size() != count)
    fail("--" + flag + "=" + text + ": expected " + Twine(count) +
         " sizes separated by 'x'");
  return dims;
}

Benchmark linearBenchmark(StringRef spec) {
  auto d = parseDims(spec, 3, "linear");
  int64_t m = d[0], k = d[1], n = d[2];
  Benchmark b;
  b.kind = "linear";
  b.name = formatv("linear {0}x{1}->{2}", m, k, n).str();
  b.shape = json::Object{{"M", m}, {"K", k}, {"N", n}};
  b.source = formatv(R"mlir(
func.func @bench(%x: tensor<?x{0}xf32>) -> tensor<?x{1}xf32> {{
  %w = tfm.weight "w" : tensor<{1}x{0}xf32>
  %y = tfm.linear %x, %w : (tensor<?x{0}xf32>, tensor<{1}x{0}xf32>) -> tensor<?x{1}xf32>
  return %y : tensor<?x{1}xf32>
}
)mlir",
                     k, n)
                 .str();
  b.args.push_back(f32Operand({m, k}));
  b.results.push_back(f32Operand({m, n}));
  b.flops = 2.0 * m * n * k;
  b.bytes = 4.0 * (m * k + n * k + m * n);
  b.unit = "GFLOP/s";
  return b;
}

Benchmark attentionBenchmark(StringRef spec) {
  // encoder:S or decoder:S, then optionally :B sentences (default 1)
  SmallVector<StringRef> parts;
  spec.split(parts, ':');
  int64_t s = 0, batch = 1;
  StringRef which = parts[0];
  if (parts.size() < 2 || parts.size() > 3 ||
      parts[1].trim().getAsInteger(10, s) || s <= 0 ||
      (parts.size() == 3 &&
       (parts[2].trim().getAsInteger(10, batch) || batch <= 0)) ||
      (which != "encoder" && which != "decoder"))
    fail("--attention=" + spec + ": expected encoder:S[:B] or decoder:S[:B]");
  const int64_t heads = 8, dh = 64;
  bool decoder = which == "decoder";
  int64_t sq = decoder ? 1 : s;
  Benchmark b;
  b.kind = "attention";
  b.name = decoder ? formatv("decoder step, cache {0}", s).str()
                   : formatv("encoder self-attention, {0} tokens", s).str();
  if (batch > 1)
    b.name += formatv(", batch {0}", batch).str();
  b.shape = json::Object{
      {"batch", batch}, {"heads", heads},
      {"head_dim", dh}, {"queries", sq},
      {"keys", s},      {"mask", decoder ? "causal" : "key lengths"}};
  // The model's attention ops (tfmc import): the encoder's with key
  // lengths, the decoder's self-attention over its cache causal.
  const char *type = "tensor<?x8x?x64xf32>";
  b.source = decoder ? formatv(R"mlir(
func.func @bench(%q: {0}, %k: {0}, %v: {0}) -> {0} {{
  %o = tfm.attention %q, %k, %v causal scale 0.125 : {0}, {0}, {0} -> {0}
  return %o : {0}
}
)mlir",
                               type)
                           .str()
                     : formatv(R"mlir(
func.func @bench(%q: {0}, %k: {0}, %v: {0}, %len: tensor<?xi32>) -> {0} {{
  %o = tfm.attention %q, %k, %v lengths(%len : tensor<?xi32>) scale 0.125 : {0}, {0}, {0} -> {0}
  return %o : {0}
}
)mlir",
                               type)
                           .str();
  b.args.push_back(f32Operand({batch, heads, sq, dh}));
  b.args.push_back(f32Operand({batch, heads, s, dh}));
  b.args.push_back(f32Operand({batch, heads, s, dh}));
  if (!decoder)
    b.args.push_back(i32Operand({batch}, int32_t(s)));
  b.results.push_back(f32Operand({batch, heads, sq, dh}));
  // Q·Kᵀ and P·V; the softmax's exponentials are not counted.
  b.flops = 4.0 * batch * heads * sq * s * dh;
  b.bytes = 4.0 * batch * heads * dh * (2 * sq + 2 * s);
  b.unit = "GFLOP/s";
  return b;
}

Benchmark layerNormBenchmark(StringRef spec) {
  auto d = parseDims(spec, 2, "layer-norm");
  int64_t rows = d[0], dim = d[1];
  Benchmark b;
  b.kind = "layer_norm";
  b.name = formatv("layer norm {0}x{1}", rows, dim).str();
  b.shape = json::Object{{"rows", rows}, {"dim", dim}};
  b.source = formatv(R"mlir(
func.func @bench(%x: tensor<?x{0}xf32>, %r: tensor<?x{0}xf32>) -> tensor<?x{0}xf32> {{
  %g = tfm.weight "gamma" : tensor<{0}xf32>
  %b = tfm.weight "beta" : tensor<{0}xf32>
  %y = tfm.layer_norm %x residual(%r : tensor<?x{0}xf32>) scale(%g : tensor<{0}xf32>) bias(%b : tensor<{0}xf32>) epsilon 1.0e-5 : tensor<?x{0}xf32>
  return %y : tensor<?x{0}xf32>
}
)mlir",
                     dim)
                 .str();
  b.args.push_back(f32Operand({rows, dim}));
  b.args.push_back(f32Operand({rows, dim}));
  b.results.push_back(f32Operand({rows, dim}));
  // Reads x and r, writes y: a memory-bound op, measured in GB/s.
  b.bytes = 4.0 * 3 * rows * dim;
  b.flops = 8.0 * rows * dim;
  b.unit = "GB/s";
  return b;
}

/// A snippet compiled by the JIT: its packed entry point and the layout of
/// the weights file it reads (tfm-layout-weights).
class Compiled {
public:
  std::unique_ptr<mlir::ExecutionEngine> engine;
  void (*function)(void **) = nullptr;
  bool hasWeights = false;
  unsigned numArguments = 0; // of the C interface
  struct Weight {
    std::string name;
    int64_t offset, rows, columns;
    int64_t panelWidth; // 0: row-major; else panels (tfm/abi/Panels.h)
    bool bf16 = false;  // panels of bf16
    bool int8 = false;  // panels of int8, scales and corrections
    bool int4 = false;  // panels of int4 with their groups' scales
  };
  std::vector<Weight> weights;
  int64_t weightsSize = 0;
};

std::unique_ptr<TargetMachine> hostMachine() {
  auto builder = orc::JITTargetMachineBuilder::detectHost();
  if (!builder)
    fail("JIT: " + toString(builder.takeError()));
  builder->getOptions().AllowFPOpFusion = FPOpFusion::Fast;
  builder->setCodeGenOptLevel(CodeGenOptLevel::Aggressive);
  auto machine = builder->createTargetMachine();
  if (!machine)
    fail("JIT: " + toString(machine.takeError()));
  return std::move(*machine);
}

/// What tfmc does to the IR and the code, in the JIT: the lowering pipeline
/// for `backend`, then LLVM at -O3 for the host CPU with FP contraction
/// (tfmc's TargetMachine has AllowFPOpFusion = Fast; here every FP
/// instruction gets the `contract` flag, which lets the same FMAs form).
Compiled compile(mlir::ModuleOp module, mlir::tfm::Backend backend,
                 const mlir::tfm::KernelConfig &kernels, TargetMachine *machine,
                 mlir::tfm::Precision precision = mlir::tfm::Precision::Fp32) {
  Compiled out;
  mlir::PassManager pm(module.getContext());
  mlir::tfm::buildLoweringPipeline(pm, backend, /*reportBackends=*/false,
                                   kernels, precision);
  if (failed(pm.run(module)))
    fail("lowering with the " + mlir::tfm::backendName(backend) +
         " backend failed");
  // The C interface's arguments: the weights file first if the function
  // reads weights (convert-tfm-to-linalg names it), then one descriptor per
  // argument and result.
  auto entry =
      module.lookupSymbol<mlir::LLVM::LLVMFuncOp>("_mlir_ciface_bench");
  if (!entry)
    fail("the " + mlir::tfm::backendName(backend) +
         " lowering has no _mlir_ciface_bench");
  auto name = entry.getArgAttrOfType<mlir::StringAttr>(0, "tfm.name");
  out.hasWeights = name && name.getValue() == "weights";
  out.numArguments = entry.getNumArguments();
  if (auto layout =
          module->getAttrOfType<mlir::ArrayAttr>(mlir::tfm::kWeightsLayoutAttr))
    for (auto entry : layout.getAsRange<mlir::DictionaryAttr>()) {
      Compiled::Weight w;
      w.name = cast<mlir::StringAttr>(entry.get("name")).str();
      w.offset = cast<mlir::IntegerAttr>(entry.get("offset")).getInt();
      auto shape =
          cast<mlir::DenseI64ArrayAttr>(entry.get("shape")).asArrayRef();
      w.rows = shape[0];
      w.columns = shape.size() > 1 ? shape[1] : 1;
      auto panel =
          dyn_cast_or_null<mlir::IntegerAttr>(entry.get("panel_width"));
      w.panelWidth = panel ? panel.getInt() : 0;
      auto type = dyn_cast_or_null<mlir::TypeAttr>(entry.get("element_type"));
      w.bf16 = type && type.getValue().isBF16();
      w.int8 = type && type.getValue().isInteger(8);
      w.int4 = type && type.getValue().isInteger(4);
      out.weights.push_back(w);
    }
  if (auto size =
          module->getAttrOfType<mlir::IntegerAttr>(mlir::tfm::kWeightsSizeAttr))
    out.weightsSize = size.getInt();

  auto optimize = mlir::makeOptimizingTransformer(3, 0, machine);
  auto transformer = [&](llvm::Module *m) -> Error {
    for (Function &f : *m)
      for (Instruction &inst : instructions(f))
        if (isa<FPMathOperator>(inst))
          inst.setHasAllowContract(true);
    return optimize(m);
  };
  mlir::ExecutionEngineOptions options;
  options.transformer = transformer;
  options.jitCodeGenOptLevel = CodeGenOptLevel::Aggressive;
  auto engine = mlir::tfm::createJit(module, options);
  if (!engine)
    fail("JIT: " + toString(engine.takeError()));
  auto function = (*engine)->lookupPacked("_mlir_ciface_bench");
  if (!function)
    fail("JIT: " + toString(function.takeError()));
  out.function = *function;
  out.engine = std::move(*engine);
  return out;
}

/// The weights file of a compiled snippet: each weight's values (seeded by
/// its name) at its offset, in its layout (row-major or panels), as tfmc
/// writes them; the row-major values are kept for the peers.
struct Weights {
  std::unique_ptr<char, decltype(&std::free)> data{nullptr, &std::free};
  std::vector<int64_t> descriptor;
  void *descriptorPtr = nullptr;
  std::map<std::string, std::vector<float>> rowMajor;

  void build(const Compiled &compiled) {
    size_t bytes = (std::max<int64_t>(compiled.weightsSize, 64) + 63) / 64 * 64;
    data.reset(static_cast<char *>(std::aligned_alloc(64, bytes)));
    std::fill(data.get(), data.get() + bytes, 0);
    for (const Compiled::Weight &w : compiled.weights) {
      std::vector<float> &values = rowMajor[w.name];
      values.resize(w.rows * w.columns);
      Random random(std::hash<std::string>()(w.name) | 1);
      random.fill(values.data(), values.size());
      auto *dst = reinterpret_cast<float *>(data.get() + w.offset);
      auto at = [&](int64_t r, int64_t c) { return values[r * w.columns + c]; };
      if (w.panelWidth && w.int8)
        tfm_runtime::packInt8Panels(w.rows, w.columns, w.panelWidth, at,
                                    reinterpret_cast<uint8_t *>(dst));
      else if (w.panelWidth && w.int4)
        tfm_runtime::packInt4Panels(w.rows, w.columns, w.panelWidth, at,
                                    reinterpret_cast<uint8_t *>(dst));
      else if (w.panelWidth && w.bf16)
        tfm_runtime::packBf16Panels(w.rows, w.columns, w.panelWidth, at,
                                    reinterpret_cast<uint16_t *>(dst));
      else if (w.panelWidth)
        tfm_runtime::packPanels(w.rows, w.columns, w.panelWidth, at, dst);
      else
        std::copy(values.begin(), values.end(), dst);
    }
    descriptor = tfm_runtime::memrefDescriptor(data.get(), {int64_t(bytes)});
    descriptorPtr = descriptor.data();
  }
  const float *tensor(StringRef name) const {
    auto it = rowMajor.find(name.str());
    if (it == rowMajor.end())
      fail("no weight '" + name + "' in the compiled snippet");
    return it->second.data();
  }
};

/// One way of computing a benchmark: a callable, and where it writes.
struct Engine {
  std::string name;
  std::string role; // "tfmc" (ours) or "peer"
  std::string backend;
  std::function<void()> run;
  const float *output = nullptr;
  // Filled in by the measurement:
  double seconds = 0, minSeconds = 0;
  int64_t calls = 0;
  double maxAbsDiff = -1, relDiff = -1;
  double rtol = 0; // 0: --rtol
};

double now() {
  return std::chrono::duration<double>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

/// Sleeps --settle seconds: the previous engine's worker threads (LLVM's
/// OpenMP keeps them spinning for 200 ms, OpenBLAS for a while) go idle.
void pause() {
  std::this_thread::sleep_for(std::chrono::duration<double>(settle));
}

/// Times `engines` on the same work: each is warmed up and given as many
/// calls per repetition as fill --min-time; then --repetitions rounds time
/// every engine once each, in turn, so that a slow spell of the machine
/// falls on all of them. Sets each one's median and fastest seconds per call.
void measure(std::vector<Engine> &engines) {
  std::vector<int64_t> calls;
  for (Engine &e : engines) {
    pause();
    double start = now();
    int64_t warm = 0;
    while (warm < 3 || now() - start < std::min(0.5 * minTime, 0.2)) {
      e.run();
      ++warm;
    }
    double perCall = (now() - start) / warm;
    calls.push_back(std::max<int64_t>(1, int64_t(minTime / perCall)));
  }
  std::vector<std::vector<double>> samples(engines.size());
  for (int r = 0; r < repetitions; ++r)
    for (size_t i = 0; i < engines.size(); ++i) {
      pause();
      double t0 = now();
      for (int64_t c = 0; c < calls[i]; ++c)
        engines[i].run();
      samples[i].push_back((now() - t0) / calls[i]);
    }
  for (size_t i = 0; i < engines.size(); ++i) {
    std::vector<double> &t = samples[i];
    std::sort(t.begin(), t.end());
    size_t n = t.size();
    engines[i].seconds = n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]);
    engines[i].minSeconds = t.front();
    engines[i].calls = calls[i] * repetitions;
  }
}

/// Max |a - b| and that relative to max |b|.
std::pair<double, double> difference(const float *a, const float *b, int64_t n,
                                     bool &finite) {
  double maxDiff = 0, maxRef = 0;
  finite = true;
  for (int64_t i = 0; i < n; ++i) {
    finite &= std::isfinite(a[i]) && std::isfinite(b[i]);
    maxDiff = std::max(maxDiff, std::abs(double(a[i]) - double(b[i])));
    maxRef = std::max(maxRef, std::abs(double(b[i])));
  }
  return {maxDiff, maxRef > 0 ? maxDiff / maxRef : maxDiff};
}

/// Keeps what an engine needs alive: compiled code, weights, arguments.
struct Instance {
  Compiled compiled;
  Weights weights;
  std::vector<Operand> args, results;
  std::vector<void *> pointers;

  /// Copies of the benchmark's inputs (same values for every engine).
  void bind(const Benchmark &b) {
    args.clear();
    results.clear();
    for (const Operand &a : b.args) {
      Operand copy;
      copy.shape = a.shape;
      copy.isInt = a.isInt;
      copy.intValue = a.intValue;
      copy.allocate(nullptr);
      if (!a.isInt)
        std::copy(a.f32.get(), a.f32.get() + a.elements(), copy.f32.get());
      args.push_back(std::move(copy));
    }
    for (const Operand &r : b.results) {
      Operand copy;
      copy.shape = r.shape;
      copy.allocate(nullptr);
      results.push_back(std::move(copy));
    }
    pointers.clear();
    if (compiled.hasWeights) {
      weights.build(compiled);
      pointers.push_back(&weights.descriptorPtr);
    }
    for (Operand &a : args)
      pointers.push_back(&a.descriptorPtr);
    for (Operand &r : results)
      pointers.push_back(&r.descriptorPtr);
    if (pointers.size() != compiled.numArguments)
      fail(b.name + ": the compiled function takes " +
           Twine(compiled.numArguments) + " arguments, not " +
           Twine(pointers.size()));
  }
  void call() { compiled.function(pointers.data()); }
};

/// Bytes of weight copies a "-streamed" engine cycles through: several
/// times the largest last-level cache of this project's hosts (32 MiB).
constexpr int64_t kStreamedBytes = int64_t(256) << 20;

/// The machine's read bandwidth with `threads` threads, in GB/s, reading a
/// `bytes` array again and again as a decode step reads its weights once a
/// token: each thread sums its share (8 independent vector sums, so neither
/// latency nor the adder binds), enough passes for 1 GiB a sample, best of
/// 5 samples after a warm-up. An array well past the last-level cache
/// gives the memory's bandwidth; one near its size, what the cache adds.
double readBandwidth(int threads, int64_t bytes = int64_t(1) << 30) {
  typedef float Vec __attribute__((vector_size(32)));
  const int64_t vectors = bytes / sizeof(Vec);
  const int64_t passes = std::max<int64_t>(1, (int64_t(1) << 30) / bytes);
  auto *data =
      static_cast<Vec *>(std::aligned_alloc(64, vectors * sizeof(Vec)));
  if (vectors < 8 * threads || !data)
    fail("cannot allocate " + Twine(bytes) +
         " bytes to measure the read bandwidth");
  std::memset(static_cast<void *>(data), 1, vectors * sizeof(Vec));
  std::vector<float> sink(threads);
  auto sample = [&] {
    std::vector<std::thread> workers;
    for (int t = 0; t < threads; ++t)
      workers.emplace_back([&, t] {
        int64_t begin = vectors * t / threads,
                end = vectors * (t + 1) / threads;
        Vec acc[8] = {};
        for (int64_t p = 0; p < passes; ++p)
          for (int64_t i = begin; i + 8 <= end; i += 8)
            for (int j = 0; j < 8; ++j)
              acc[j] += data[i + j];
        float total = 0;
        for (const Vec &v : acc)
          for (int j = 0; j < 8; ++j)
            total += v[j];
        sink[t] = total;
      });
    for (std::thread &w : workers)
      w.join();
  };
  sample();
  double best = 1e30;
  for (int i = 0; i < 5; ++i) {
    double start = now();
    sample();
    best = std::min(best, now() - start);
  }
  std::free(data);
  if (sink[0] == 42.0f) // keep the sums alive
    errs() << "";
  return double(vectors * sizeof(Vec)) * passes / best * 1e-9;
}

json::Value runBenchmark(Benchmark &b, mlir::MLIRContext &context,
                         TargetMachine *machine, const Lowering &lowering,
                         bool &ok) {
  Random random(0x7fb5d329728ea185ULL ^ std::hash<std::string>()(b.name));
  for (Operand &a : b.args)
    a.allocate(&random);

  mlir::OwningOpRef<mlir::ModuleOp> fused =
      mlir::parseSourceString<mlir::ModuleOp>(b.source, &context);
  if (!fused)
    fail("cannot parse the snippet of " + b.name + ":\n" + b.source);

  std::vector<std::unique_ptr<Instance>> instances;
  std::vector<Engine> engines;
  auto addCompiled = [&](mlir::ModuleOp module, const std::string &name,
                         mlir::tfm::Backend backend,
                         mlir::tfm::Precision precision =
                             mlir::tfm::Precision::Fp32) {
    auto instance = std::make_unique<Instance>();
    instance->compiled =
        compile(module, backend, lowering.kernels, machine, precision);
    instance->bind(b);
    Instance *raw = instance.get();
    Engine e;
    e.name = name;
    e.role = "tfmc";
    e.backend = mlir::tfm::backendName(backend).str();
    e.run = [raw] { raw->call(); };
    e.output = raw->results[0].f32.get();
    if (precision == mlir::tfm::Precision::Bf16)
      e.rtol = bf16Rtol;
    if (precision == mlir::tfm::Precision::Int8)
      e.rtol = int8Rtol;
    if (precision == mlir::tfm::Precision::Int4)
      e.rtol = int4Rtol;
    engines.push_back(std::move(e));
    instances.push_back(std::move(instance));
  };

  // Ours: the fused snippet per backend. Peers: the libraries (linears) or
  // the decomposed graph on the same backend (fused ops).
  for (mlir::tfm::Backend backend : lowering.backends) {
    mlir::OwningOpRef<mlir::ModuleOp> copy = fused->clone();
    addCompiled(*copy, "tfmc-" + mlir::tfm::backendName(backend).str(),
                backend);
  }
  // Linears in narrower precisions: our code, and oneDNN's bf16 or
  // u8 x s8 matmul too when the oneDNN backend is chosen.
  std::vector<size_t> streamedSources = {0};
  if (b.kind == "linear")
    for (mlir::tfm::Precision precision : lowering.narrower) {
      std::string name = mlir::tfm::precisionName(precision).str();
      mlir::OwningOpRef<mlir::ModuleOp> copy = fused->clone();
      streamedSources.push_back(instances.size());
      addCompiled(*copy, "tfmc-llvm-" + name, mlir::tfm::Backend::Llvm,
                  precision);
      if (llvm::is_contained(lowering.backends, mlir::tfm::Backend::OneDnn) &&
          precision != mlir::tfm::Precision::Int4) {
        mlir::OwningOpRef<mlir::ModuleOp> onednn = fused->clone();
        addCompiled(*onednn, "tfmc-onednn-" + name, mlir::tfm::Backend::OneDnn,
                    precision);
      }
    }
  // A decoder step reads every weight once, from memory: for linears with
  // up to 32 rows (a step of 32 sentences), our first backend (and each
  // narrower precision) also runs over copies of its weights file that
  // together exceed the caches, one after the other, so every call streams
  // its weights from DRAM ("-streamed").
  std::deque<std::vector<Weights>> streamedCopies;
  if (b.kind == "linear" && b.shape.getInteger("M").value() <= 32 &&
      instances.front()->compiled.hasWeights) {
    size_t ours = instances.size();
    for (size_t source : streamedSources) {
      Instance *first = instances[source].get();
      int64_t bytes = std::max<int64_t>(first->compiled.weightsSize, 64);
      int64_t copies =
          std::max<int64_t>(2, (kStreamedBytes + bytes - 1) / bytes);
      std::vector<Weights> &set = streamedCopies.emplace_back(copies);
      for (Weights &w : set)
        w.build(first->compiled);
      Engine e;
      e.name = engines[source].name + "-streamed";
      e.role = "tfmc";
      e.backend = engines[source].backend;
      e.rtol = engines[source].rtol;
      auto next = std::make_shared<size_t>(0);
      e.run = [first, next, &set] {
        first->pointers[0] = &set[*next].descriptorPtr;
        *next = (*next + 1) % set.size();
        first->call();
        first->pointers[0] = &first->weights.descriptorPtr;
      };
      e.output = first->results[0].f32.get();
      engines.insert(engines.begin() + ours++, std::move(e));
    }
  }
  std::vector<std::unique_ptr<Buffer>> outputs;
  std::unique_ptr<tfm_bench::OneDnnLinear, void (*)(tfm_bench::OneDnnLinear *)>
      onednn(nullptr, &tfm_bench::oneDnnLinearDestroy);
  if (b.kind == "linear") {
    int64_t m = b.shape.getInteger("M").value(),
            k = b.shape.getInteger("K").value(),
            n = b.shape.getInteger("N").value();
    const Instance &ours = *instances.front();
    const float *w = ours.weights.tensor("w");
    const float *x = b.args[0].f32.get();
    outputs.push_back(std::make_unique<Buffer>(m * n));
    float *y = outputs.back()->get();
    Engine blas;
    blas.name = "openblas";
    blas.role = "peer";
    blas.run = [=] { tfm_bench::openblasLinear(x, w, y, m, k, n); };
    blas.output = y;
    engines.push_back(std::move(blas));
    if (!noOneDnn) {
      std::string error;
      onednn.reset(tfm_bench::oneDnnLinearCreate(w, m, k, n, error));
      if (!onednn)
        fail(b.name + ": " + error);
      outputs.push_back(std::make_unique<Buffer>(m * n));
      float *y2 = outputs.back()->get();
      Engine dnn;
      dnn.name = "onednn";
      dnn.role = "peer";
      tfm_bench::OneDnnLinear *handle = onednn.get();
      dnn.run = [=] {
        std::string err;
        if (!tfm_bench::oneDnnLinearRun(handle, x, y2, err))
          fail(err);
      };
      dnn.output = y2;
      engines.push_back(std::move(dnn));
    }
  } else {
    for (mlir::tfm::Backend backend : lowering.backends) {
      mlir::OwningOpRef<mlir::ModuleOp> decomposed = fused->clone();
      mlir::PassManager pm(&context);
      pm.addPass(mlir::tfm::createTfmDecomposePass());
      if (failed(pm.run(*decomposed)))
        fail("tfm-decompose failed on " + b.name);
      addCompiled(*decomposed,
                  "unfused-" + mlir::tfm::backendName(backend).str(), backend);
      engines.back().role = "peer";
    }
  }

  // Correctness, once: every engine against the first peer.
  const Engine *reference = nullptr;
  for (const Engine &e : engines)
    if (e.role == "peer") {
      reference = &e;
      break;
    }
  int64_t outputElements = b.results[0].elements();
  for (Engine &e : engines)
    e.run();
  json::Array checks;
  for (Engine &e : engines) {
    if (&e == reference)
      continue;
    bool finite;
    auto [absDiff, relDiff] =
        difference(e.output, reference->output, outputElements, finite);
    e.maxAbsDiff = absDiff;
    e.relDiff = relDiff;
    double tolerance = e.rtol ? e.rtol : double(rtol);
    bool pass = finite && relDiff <= tolerance;
    if (!pass) {
      WithColor::error(errs(), "tfm-bench")
          << b.name << ": " << e.name << " differs from " << reference->name
          << " by " << format("%.3g", absDiff) << " ("
          << format("%.3g", relDiff) << " relative, rtol "
          << format("%.0e", tolerance) << ")" << (finite ? "" : ", not finite")
          << "\n";
      ok = false;
    }
    checks.push_back(json::Object{{"engine", e.name},
                                  {"against", reference->name},
                                  {"max_abs_diff", absDiff},
                                  {"max_rel_diff", relDiff},
                                  {"ok", pass}});
  }

  measure(engines);
  for (Engine &e : engines) {
    errs() << formatv("  {0,-38} {1,-12} {2,10:f1} us  {3,8:f1} {4}\n", b.name,
                      e.name, e.seconds * 1e6, b.work() / e.seconds * 1e-9,
                      b.unit);
  }

  json::Object engineResults;
  json::Array order; // JSON objects print sorted; this is the run's order
  for (const Engine &e : engines) {
    order.push_back(e.name);
    json::Object r{{"role", e.role},
                   {"seconds", e.seconds},
                   {"min_seconds", e.minSeconds},
                   {"calls", e.calls},
                   {"rate", b.work() / e.seconds * 1e-9}};
    if (!e.backend.empty())
      r["backend"] = e.backend;
    engineResults[e.name] = std::move(r);
  }
  return json::Object{{"kind", b.kind},
                      {"name", b.name},
                      {"shape", std::move(b.shape)},
                      {"unit", b.unit},
                      {"flops", b.flops},
                      {"bytes", b.bytes},
                      {"engines", std::move(engineResults)},
                      {"engine_order", std::move(order)},
                      {"checks", std::move(checks)}};
}
} // namespace

int main(int argc, char **argv) {
  InitLLVM init(argc, argv);
  mlir::tfm::registerAllTfmPasses();
  cl::ParseCommandLineOptions(argc, argv,
                              "tfm-bench: micro-benchmarks of tfm kernels\n");
  if (listBackends) {
    for (mlir::tfm::Backend backend : mlir::tfm::kAllBackends)
      outs() << mlir::tfm::backendName(backend) << "\n";
    return 0;
  }
  Lowering lowering = chooseLowering();
  // The kernels allocate their results as in a translator, which reuses
  // the memory of one call in the next: timed alike.
  tfm_runtime::prepareHeap();
  if (threads < 1 || repetitions < 1 || minTime <= 0)
    fail("--num-threads, --repetitions and --min-time must be positive");
  tfm_bench::setThreads(threads);

  InitializeNativeTarget();
  InitializeNativeTargetAsmPrinter();
  std::unique_ptr<TargetMachine> machine = hostMachine();

  mlir::MLIRContext context(mlir::tfm::jitRegistry());

  std::vector<Benchmark> benchmarks;
  for (const std::string &s : linears)
    benchmarks.push_back(linearBenchmark(s));
  for (const std::string &s : attentions)
    benchmarks.push_back(attentionBenchmark(s));
  for (const std::string &s : layerNorms)
    benchmarks.push_back(layerNormBenchmark(s));

  // The read bandwidth before and after the kernels: the machines are
  // shared, and a kernel is judged against what the memory gave meanwhile.
  double bandwidthBefore = readBandwidth(threads);
  errs() << formatv("  read bandwidth {0:f1} GB/s\n", bandwidthBefore);
  bool ok = true;
  json::Array results;
  for (Benchmark &b : benchmarks)
    results.push_back(runBenchmark(b, context, machine.get(), lowering, ok));
  double bandwidthAfter = readBandwidth(threads);
  errs() << formatv("  read bandwidth {0:f1} GB/s\n", bandwidthAfter);

  json::Object document{
      {"threads", int64_t(threads)},
      {"min_time", double(minTime)},
      {"repetitions", int64_t(repetitions)},
      {"cpu", sys::getHostCPUName().str()},
      {"onednn", tfm_bench::oneDnnVersion()},
      {"openblas", tfm_bench::openblasVersion()},
      {"benchmarks", std::move(results)},
      {"read_bandwidth_gbs", json::Array{bandwidthBefore, bandwidthAfter}},
  };
  json::Array sized;
  for (int64_t bytes : readBytes)
    sized.push_back(
        json::Object{{"bytes", bytes}, {"gbs", readBandwidth(threads, bytes)}});
  document["read_bandwidth_by_size"] = std::move(sized);
  tfm_bench::SynchronizationCosts sync =
      tfm_bench::synchronizationCosts(threads);
  document["fork_join_us"] = sync.forkJoinMicroseconds;
  document["in_region_barrier_us"] = sync.barrierMicroseconds;
  json::Array precisionList{
      mlir::tfm::precisionName(mlir::tfm::Precision::Fp32)};
  for (mlir::tfm::Precision precision : lowering.narrower)
    precisionList.push_back(mlir::tfm::precisionName(precision));
  document["precisions"] = std::move(precisionList);
  outs() << formatv("{0:2}", json::Value(std::move(document))) << "\n";
  return ok ? 0 : 1;
}
