//===- OneDnnKernels.cpp - The oneDNN calls of compiled models ----*- C++ -*-===//
//
// What convert-tfm-to-onednn's calls run (the contract: OneDnnAbi.h). Each
// primitive is created once per shape and layout and kept; each weight
// matrix is reordered once, on first use, into the layout oneDNN's matmul
// prefers, and kept. oneDNN's C++ API throws: errors are caught here, at the
// boundary with compiled code, and end the process with a message (the
// compiled code has no way to unwind).
//
//===----------------------------------------------------------------------===//

#include "OneDnnAbi.h"

#include "mlir/ExecutionEngine/CRunnerUtils.h"

#include <dnnl.hpp>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <vector>

using namespace tfm_runtime::onednn;
using dnnl::algorithm;
using dnnl::memory;
using dnnl::primitive;
using dnnl::prop_kind;

namespace {

using Memref = UnrankedMemRefType<float>;
using Dims = memory::dims;

dnnl::engine &cpuEngine() {
  static dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

dnnl::stream &cpuStream() {
  static dnnl::stream stream(cpuEngine());
  return stream;
}

/// A tensor as oneDNN sees it: sizes, strides (in elements) and data.
struct View {
  Dims dims, strides;
  float *data;

  explicit View(const Memref *m) {
    DynamicMemRefType<float> d(*m);
    dims.assign(d.sizes, d.sizes + d.rank);
    strides.assign(d.strides, d.strides + d.rank);
    data = d.data + d.offset;
  }
  int64_t rank() const { return static_cast<int64_t>(dims.size()); }
  int64_t last() const { return dims.back(); }
  memory::desc desc() const {
    return memory::desc(dims, memory::data_type::f32, strides);
  }
  memory mem(const memory::desc &md) const {
    return memory(md, cpuEngine(), data);
  }
};

[[noreturn]] void fail(const char *kernel, const std::string &message) {
  std::fprintf(stderr, "tfm runtime: %s (oneDNN) failed: %s\n", kernel,
               message.c_str());
  std::abort();
}

/// Primitives by a key of everything they were created for.
template <typename Make>
primitive &cachedPrimitive(const std::vector<int64_t> &key, Make make) {
  static std::map<std::vector<int64_t>, primitive> cache;
  static std::mutex mutex;
  std::lock_guard<std::mutex> lock(mutex);
  auto it = cache.find(key);
  if (it == cache.end())
    it = cache.emplace(key, make()).first;
  return it->second;
}

std::vector<int64_t> keyOf(int64_t kernel, std::initializer_list<Dims> parts,
                           int64_t code = 0) {
  std::vector<int64_t> key = {kernel, code};
  for (const Dims &p : parts) {
    key.push_back(static_cast<int64_t>(p.size()));
    key.insert(key.end(), p.begin(), p.end());
  }
  return key;
}

Dims denseStrides(const Dims &dims) {
  Dims strides(dims.size());
  int64_t s = 1;
  for (size_t i = dims.size(); i-- > 0;) {
    strides[i] = s;
    s *= dims[i];
  }
  return strides;
}

bool isDense(const View &v) { return v.strides == denseStrides(v.dims); }

int64_t elementsOf(const View &v) {
  int64_t n = 1;
  for (int64_t d : v.dims)
    n *= d;
  return n;
}

/// Copies `src` (any strides) into the dense buffer `dst` of the same dims.
void copyDense(const View &src, float *dst) {
  if (isDense(src)) {
    std::memcpy(dst, src.data, sizeof(float) * elementsOf(src));
    return;
  }
  memory::desc from = src.desc();
  memory::desc to(src.dims, memory::data_type::f32, denseStrides(src.dims));
  primitive &copy = cachedPrimitive(keyOf(0, {src.dims, src.strides}), [&] {
    return dnnl::reorder(
        dnnl::reorder::primitive_desc(cpuEngine(), from, cpuEngine(), to));
  });
  memory a = src.mem(from), b(to, cpuEngine(), dst);
  copy.execute(cpuStream(), {{DNNL_ARG_FROM, a}, {DNNL_ARG_TO, b}});
}

/// `v` dense: itself if it is laid out so, else a copy into `scratch`.
View dense(const View &v, std::vector<float> &scratch) {
  if (isDense(v))
    return v;
  View copy = v;
  scratch.resize(elementsOf(v));
  copyDense(v, scratch.data());
  copy.strides = denseStrides(v.dims);
  copy.data = scratch.data();
  return copy;
}

/// `v` as a dense [rows, last] matrix (a copy into `scratch` if need be).
View denseRows(const View &v, std::vector<float> &scratch) {
  View rows = dense(v, scratch);
  rows.dims = {elementsOf(v) / v.last(), v.last()};
  rows.strides = {v.last(), 1};
  return rows;
}

algorithm activationAlgorithm(int64_t activation) {
  switch (activation) {
  case kRelu:
    return algorithm::eltwise_relu;
  case kGelu:
    return algorithm::eltwise_gelu_erf;
  case kSilu:
    return algorithm::eltwise_swish; // x · sigmoid(alpha · x), alpha = 1
  default:
    return algorithm::undef;
  }
}

//===----------------------------------------------------------------------===//
// Linear layers: weights reordered once
//===----------------------------------------------------------------------===//

/// A weight matrix [N, K] in the layout oneDNN's matmul picks for it, which
/// does not depend on the number of rows (measured on oneDNN 2.6: the same
/// for M = 1 .. 1024), so one copy serves every batch size.
struct PackedWeights {
  memory::desc desc;
  memory packed;
};

/// A few values of the matrix, so that another matrix later mapped at the
/// same address (another model in the same process) is not taken for it.
std::vector<int64_t> sampleOf(const View &w) {
  std::vector<int64_t> sample;
  int64_t n = w.dims[0], k = w.dims[1];
  for (int64_t i : {int64_t(0), n / 2, n - 1})
    for (int64_t j : {int64_t(0), k / 2, k - 1}) {
      float value = w.data[i * w.strides[0] + j * w.strides[1]];
      int32_t bits;
      std::memcpy(&bits, &value, sizeof bits);
      sample.push_back(bits);
    }
  return sample;
}

/// The f32 matrix w in oneDNN's layout for a matmul of `type` (f32, or bf16
/// rounded to nearest even by the reorder).
const PackedWeights &packedWeights(const View &w, memory::data_type type) {
  static std::map<std::vector<int64_t>, PackedWeights> cache;
  static std::mutex mutex;
  std::vector<int64_t> key = {reinterpret_cast<int64_t>(w.data),
                              w.dims[0],
                              w.dims[1],
                              w.strides[0],
                              w.strides[1],
                              static_cast<int64_t>(type)};
  std::vector<int64_t> sample = sampleOf(w);
  key.insert(key.end(), sample.begin(), sample.end());
  std::lock_guard<std::mutex> lock(mutex);
  auto it = cache.find(key);
  if (it != cache.end())
    return it->second;
  int64_t n = w.dims[0], k = w.dims[1];
  // The [K, N] operand of x · Wᵀ is W read with its strides swapped.
  memory::desc plain({k, n}, memory::data_type::f32,
                     Dims{w.strides[1], w.strides[0]});
  memory::desc any({k, n}, type, memory::format_tag::any);
  memory::desc src({64, k}, type, memory::format_tag::ab);
  memory::desc dst({64, n}, memory::data_type::f32, memory::format_tag::ab);
  dnnl::matmul::primitive_desc probe(dnnl::matmul::desc(src, any, dst),
                                     cpuEngine());
  PackedWeights packed{probe.weights_desc(),
                       memory(probe.weights_desc(), cpuEngine())};
  memory from(plain, cpuEngine(), w.data);
  dnnl::reorder(from, packed.packed).execute(cpuStream(), from, packed.packed);
  cpuStream().wait();
  return cache.emplace(key, std::move(packed)).first->second;
}

void linear(const Memref *xm, const Memref *wm, const Memref *biasm,
            const Memref *residualm, const Memref *outm, int64_t code) {
  View x(xm), w(wm), out(outm);
  std::vector<float> scratch;
  View rows = denseRows(x, scratch);
  int64_t m = rows.dims[0], k = rows.dims[1], n = w.dims[0];
  // bf16: the products of x and w rounded to bf16 are exact in f32, only
  // their sums round (as in our bf16 kernel and the reference).
  memory::data_type productType =
      code & kBf16Products ? memory::data_type::bf16 : memory::data_type::f32;
  memory::desc src({m, k}, productType, memory::format_tag::ab);
  memory::desc dst({m, n}, memory::data_type::f32, memory::format_tag::ab);
  memory::desc bias({1, n}, memory::data_type::f32, memory::format_tag::ab);
  const PackedWeights &weights = packedWeights(w, productType);
  bool hasBias = code & kHasBias, hasResidual = code & kHasResidual;

  // dst = act(x·W + b) + dst, with the residual copied into dst first.
  primitive &matmul = cachedPrimitive(
      keyOf(1, {{m, k, n}},
            code & (kActivationMask | kHasBias | kHasResidual | kBf16Products)),
      [&] {
        dnnl::post_ops postOps;
        algorithm act = activationAlgorithm(code & kActivationMask);
        if (act != algorithm::undef)
          postOps.append_eltwise(1.f, act, act == algorithm::eltwise_swish
                                               ? 1.f
                                               : 0.f,
                                 0.f);
        if (hasResidual)
          postOps.append_sum(1.f);
        dnnl::primitive_attr attr;
        attr.set_post_ops(postOps);
        auto desc = hasBias ? dnnl::matmul::desc(src, weights.desc, bias, dst)
                            : dnnl::matmul::desc(src, weights.desc, dst);
        return dnnl::matmul(
            dnnl::matmul::primitive_desc(desc, attr, cpuEngine()));
      });
  if (hasResidual) {
    View residual(residualm);
    residual.dims = out.dims;
    if (isDense(residual))
      std::memcpy(out.data, residual.data, sizeof(float) * m * n);
    else
      copyDense(residual, out.data);
  }
  memory source = rows.mem(
      memory::desc({m, k}, memory::data_type::f32, memory::format_tag::ab));
  if (productType == memory::data_type::bf16) {
    // x rounded to bf16 once per call, by a reorder (nearest even).
    memory rounded(src, cpuEngine());
    primitive &round = cachedPrimitive(
        keyOf(7, {{m, k}}), [&] { return dnnl::reorder(source, rounded); });
    round.execute(cpuStream(),
                  {{DNNL_ARG_FROM, source}, {DNNL_ARG_TO, rounded}});
    source = rounded;
  }
  std::unordered_map<int, memory> args = {{DNNL_ARG_SRC, source},
                                          {DNNL_ARG_WEIGHTS, weights.packed},
                                          {DNNL_ARG_DST, out.mem(dst)}};
  std::vector<float> biasScratch;
  if (hasBias)
    args.emplace(DNNL_ARG_BIAS,
                 dense(View(biasm), biasScratch).mem(bias));
  matmul.execute(cpuStream(), args);
}

//===----------------------------------------------------------------------===//
// Batched products, normalization, softmax, elementwise
//===----------------------------------------------------------------------===//

void matmul(const Memref *am, const Memref *bm, const Memref *outm,
            float alpha, int64_t code) {
  View a(am), b(bm), out(outm);
  // A transpose swaps the two innermost axes: the same data, strides swapped.
  auto transpose = [](View &v) {
    int64_t r = v.rank();
    std::swap(v.dims[r - 1], v.dims[r - 2]);
    std::swap(v.strides[r - 1], v.strides[r - 2]);
  };
  if (code & kTransposeLhs)
    transpose(a);
  if (code & kTransposeRhs)
    transpose(b);
  int32_t alphaBits;
  std::memcpy(&alphaBits, &alpha, sizeof alphaBits);
  primitive &product = cachedPrimitive(
      keyOf(2, {a.dims, a.strides, b.dims, b.strides, out.dims}, alphaBits),
      [&] {
        dnnl::primitive_attr attr;
        if (alpha != 1.f) {
          dnnl::post_ops postOps;
          postOps.append_eltwise(1.f, algorithm::eltwise_linear, alpha, 0.f);
          attr.set_post_ops(postOps);
        }
        return dnnl::matmul(dnnl::matmul::primitive_desc(
            dnnl::matmul::desc(a.desc(), b.desc(), out.desc()), attr,
            cpuEngine()));
      });
  product.execute(cpuStream(), {{DNNL_ARG_SRC, a.mem(a.desc())},
                                {DNNL_ARG_WEIGHTS, b.mem(b.desc())},
                                {DNNL_ARG_DST, out.mem(out.desc())}});
}

algorithm binaryAlgorithm(int64_t kind) {
  switch (kind) {
  case kAdd:
    return algorithm::binary_add;
  case kSub:
    return algorithm::binary_sub;
  case kMul:
    return algorithm::binary_mul;
  default:
    return algorithm::binary_div;
  }
}

/// out = a op b, b broadcast to a's shape (leading axes of size 1 added).
void binary(const View &a, View b, const View &out, int64_t kind) {
  while (b.rank() < a.rank()) {
    b.dims.insert(b.dims.begin(), 1);
    b.strides.insert(b.strides.begin(), 0);
  }
  // oneDNN reads a broadcast axis as size 1 with any stride.
  for (int64_t d = 0; d < b.rank(); ++d)
    if (b.dims[d] == 1)
      b.strides[d] = d + 1 < b.rank() ? b.strides[d + 1] * b.dims[d + 1] : 1;
  primitive &op = cachedPrimitive(
      keyOf(3, {a.dims, a.strides, b.dims, b.strides, out.strides}, kind),
      [&] {
        return dnnl::binary(dnnl::binary::primitive_desc(
            dnnl::binary::desc(binaryAlgorithm(kind), a.desc(), b.desc(),
                               out.desc()),
            cpuEngine()));
      });
  op.execute(cpuStream(), {{DNNL_ARG_SRC_0, a.mem(a.desc())},
                           {DNNL_ARG_SRC_1, b.mem(b.desc())},
                           {DNNL_ARG_DST, out.mem(out.desc())}});
}

/// The [rows, last] source and destination of a row-wise primitive whose
/// source and destination share one layout: `x` itself if it is dense,
/// else (or with a residual to add first) `out` filled with x (+ residual),
/// for the primitive to run in place.
std::pair<View, View> rowsOf(const View &x, const Memref *residualm,
                             bool hasResidual, const View &out) {
  View rows = out;
  rows.dims = {elementsOf(out) / out.last(), out.last()};
  rows.strides = {out.last(), 1};
  View src = rows;
  if (hasResidual)
    binary(x, View(residualm), out, kAdd);
  else if (isDense(x))
    src.data = x.data;
  else
    copyDense(x, out.data);
  return {src, rows};
}

void layerNorm(const Memref *xm, const Memref *residualm,
               const Memref *scalem, const Memref *shiftm,
               const Memref *outm, float epsilon, int64_t code) {
  View x(xm), out(outm);
  std::pair<View, View> io = rowsOf(x, residualm, code & kHasResidual, out);
  const View &src = io.first, &rows = io.second;
  bool hasScale = code & kHasScale, hasShift = code & kHasBias;
  auto flags = dnnl::normalization_flags::none;
  if (hasScale)
    flags |= dnnl::normalization_flags::use_scale;
  if (hasShift)
    flags |= dnnl::normalization_flags::use_shift;
  int32_t epsilonBits;
  std::memcpy(&epsilonBits, &epsilon, sizeof epsilonBits);
  primitive &norm = cachedPrimitive(
      keyOf(4, {rows.dims}, (code & (kHasScale | kHasBias)) |
                                (int64_t(epsilonBits) << 16)),
      [&] {
        return dnnl::layer_normalization_forward(
            dnnl::layer_normalization_forward::primitive_desc(
                dnnl::layer_normalization_forward::desc(
                    prop_kind::forward_inference, rows.desc(), epsilon,
                    flags),
                cpuEngine()));
      });
  std::unordered_map<int, memory> args = {
      {DNNL_ARG_SRC, src.mem(rows.desc())},
      {DNNL_ARG_DST, rows.mem(rows.desc())}};
  memory::desc channels({rows.last()}, memory::data_type::f32,
                        memory::format_tag::a);
  std::vector<float> scaleScratch, shiftScratch;
  if (hasScale)
    args.emplace(DNNL_ARG_SCALE,
                 dense(View(scalem), scaleScratch).mem(channels));
  if (hasShift)
    args.emplace(DNNL_ARG_SHIFT,
                 dense(View(shiftm), shiftScratch).mem(channels));
  norm.execute(cpuStream(), args);
}

void softmax(const Memref *xm, const Memref *outm) {
  View x(xm), out(outm);
  std::pair<View, View> io = rowsOf(x, nullptr, false, out);
  const View &src = io.first, &rows = io.second;
  primitive &op = cachedPrimitive(keyOf(5, {rows.dims}), [&] {
    return dnnl::softmax_forward(dnnl::softmax_forward::primitive_desc(
        dnnl::softmax_forward::desc(prop_kind::forward_inference, rows.desc(),
                                    1),
        cpuEngine()));
  });
  op.execute(cpuStream(), {{DNNL_ARG_SRC, src.mem(rows.desc())},
                           {DNNL_ARG_DST, rows.mem(rows.desc())}});
}

void eltwise(const Memref *xm, const Memref *outm, int64_t kind,
             float alpha) {
  View x(xm), out(outm);
  std::pair<View, View> io = rowsOf(x, nullptr, false, out);
  const View &src = io.first, &rows = io.second;
  algorithm alg;
  float a = 0.f, b = 0.f;
  switch (kind) {
  case kEltRelu:
    alg = algorithm::eltwise_relu;
    break;
  case kEltGelu:
    alg = algorithm::eltwise_gelu_erf;
    break;
  case kEltSilu:
    alg = algorithm::eltwise_swish, a = 1.f;
    break;
  case kEltSqrt:
    alg = algorithm::eltwise_sqrt;
    break;
  case kEltRsqrt: // alpha · x^beta
    alg = algorithm::eltwise_pow, a = 1.f, b = -0.5f;
    break;
  default: // alpha · x + beta
    alg = algorithm::eltwise_linear, a = alpha;
    break;
  }
  int32_t alphaBits;
  std::memcpy(&alphaBits, &a, sizeof alphaBits);
  primitive &op = cachedPrimitive(
      keyOf(6, {rows.dims}, kind | (int64_t(alphaBits) << 8)), [&] {
        return dnnl::eltwise_forward(dnnl::eltwise_forward::primitive_desc(
            dnnl::eltwise_forward::desc(prop_kind::forward_inference, alg,
                                        rows.desc(), a, b),
            cpuEngine()));
      });
  op.execute(cpuStream(), {{DNNL_ARG_SRC, src.mem(rows.desc())},
                           {DNNL_ARG_DST, rows.mem(rows.desc())}});
}

template <typename Fn> void guarded(const char *kernel, Fn fn) {
  try {
    fn();
    cpuStream().wait();
  } catch (const dnnl::error &e) {
    fail(kernel, e.what());
  } catch (const std::exception &e) {
    fail(kernel, e.what());
  }
}

} // namespace

extern "C" {

void _mlir_ciface_tfm_onednn_linear(Memref *x, Memref *w, Memref *bias,
                                    Memref *residual, Memref *out,
                                    int64_t code) {
  guarded("linear", [&] { linear(x, w, bias, residual, out, code); });
}

void _mlir_ciface_tfm_onednn_matmul(Memref *a, Memref *b, Memref *out,
                                    float alpha, int64_t code) {
  guarded("matmul", [&] { matmul(a, b, out, alpha, code); });
}

void _mlir_ciface_tfm_onednn_layer_norm(Memref *x, Memref *residual,
                                        Memref *scale, Memref *shift,
                                        Memref *out, float epsilon,
                                        int64_t code) {
  guarded("layer_norm",
          [&] { layerNorm(x, residual, scale, shift, out, epsilon, code); });
}

void _mlir_ciface_tfm_onednn_softmax(Memref *x, Memref *out) {
  guarded("softmax", [&] { softmax(x, out); });
}

void _mlir_ciface_tfm_onednn_binary(Memref *a, Memref *b, Memref *out,
                                    int64_t kind) {
  guarded("binary", [&] { binary(View(a), View(b), View(out), kind); });
}

void _mlir_ciface_tfm_onednn_eltwise(Memref *x, Memref *out, int64_t kind,
                                     float alpha) {
  guarded("eltwise", [&] { eltwise(x, out, kind, alpha); });
}

} // extern "C"
