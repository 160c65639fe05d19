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

#include "tfm/abi/OneDnnAbi.h"

#include "tfm/abi/Panels.h"
#include "mlir/ExecutionEngine/CRunnerUtils.h"

#include <dnnl.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
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

/// What a weight matrix is cached by: where it is, its shape, how its
/// products are taken and a sample of its values.
std::vector<int64_t> weightKey(const View &w, memory::data_type type) {
  std::vector<int64_t> key = {reinterpret_cast<int64_t>(w.data),
                              w.dims[0],
                              w.dims[1],
                              w.strides[0],
                              w.strides[1],
                              static_cast<int64_t>(type)};
  std::vector<int64_t> sample = sampleOf(w);
  key.insert(key.end(), sample.begin(), sample.end());
  return key;
}

/// The [K, N] operand `plain` at `data` reordered (converted to `type` if
/// need be) into the layout oneDNN's matmul of `srcType` rows into
/// `dstType` ones picks for it.
PackedWeights pack(const memory::desc &plain, void *data,
                   memory::data_type srcType, memory::data_type type,
                   memory::data_type dstType) {
  int64_t k = plain.dims()[0], n = plain.dims()[1];
  memory::desc any({k, n}, type, memory::format_tag::any);
  memory::desc src({64, k}, srcType, memory::format_tag::ab);
  memory::desc dst({64, n}, dstType, memory::format_tag::ab);
  dnnl::matmul::primitive_desc probe(dnnl::matmul::desc(src, any, dst),
                                     cpuEngine());
  PackedWeights packed{probe.weights_desc(),
                       memory(probe.weights_desc(), cpuEngine())};
  memory from(plain, cpuEngine(), data);
  dnnl::reorder(from, packed.packed).execute(cpuStream(), from, packed.packed);
  cpuStream().wait();
  return packed;
}

/// The f32 matrix w in oneDNN's layout for a matmul of `type` (f32, or bf16
/// rounded to nearest even by the reorder).
const PackedWeights &packedWeights(const View &w, memory::data_type type) {
  static std::map<std::vector<int64_t>, PackedWeights> cache;
  static std::mutex mutex;
  std::vector<int64_t> key = weightKey(w, type);
  std::lock_guard<std::mutex> lock(mutex);
  auto it = cache.find(key);
  if (it != cache.end())
    return it->second;
  // The [K, N] operand of x · Wᵀ is W read with its strides swapped.
  memory::desc plain({w.dims[1], w.dims[0]}, memory::data_type::f32,
                     Dims{w.strides[1], w.strides[0]});
  return cache
      .emplace(key, pack(plain, w.data, type, type, memory::data_type::f32))
      .first->second;
}

/// A weight matrix [N, K] as --precision int8 makes it (tfm/abi/Panels.h,
/// the quantization our panels hold): per output feature n the integers
/// q_W[n, :] in [-127, 127], their scale s_W[n] and sum Σ_k q_W[n, k]; the
/// integers in oneDNN's layout for a u8 x s8 matmul.
struct QuantizedWeights {
  PackedWeights integers;
  std::vector<float> scales;
  std::vector<int32_t> sums;
};

const QuantizedWeights &quantizedWeights(const View &w) {
  static std::map<std::vector<int64_t>, QuantizedWeights> cache;
  static std::mutex mutex;
  std::vector<int64_t> key = weightKey(w, memory::data_type::s8);
  std::lock_guard<std::mutex> lock(mutex);
  auto it = cache.find(key);
  if (it != cache.end())
    return it->second;
  int64_t n = w.dims[0], k = w.dims[1];
  std::vector<int8_t> integers(n * k); // [N, K], dense
  QuantizedWeights quantized;
  quantized.scales.resize(n);
  quantized.sums.resize(n);
  for (int64_t row = 0; row < n; ++row) {
    mlir::tfm::Int8Row r = mlir::tfm::quantizeInt8Row(
        k,
        [&](int64_t col) {
          return w.data[row * w.strides[0] + col * w.strides[1]];
        },
        [&](int64_t col, int8_t q) { integers[row * k + col] = q; });
    quantized.scales[row] = r.scale;
    quantized.sums[row] = r.sum;
  }
  memory::desc plain({k, n}, memory::data_type::s8, Dims{1, k});
  quantized.integers = pack(plain, integers.data(), memory::data_type::u8,
                            memory::data_type::s8, memory::data_type::s32);
  return cache.emplace(key, std::move(quantized)).first->second;
}

/// round_even(v) for |v| < 2^22 under the default rounding mode: adding
/// 1.5 · 2^23 leaves no fraction bits, so the sum is rounded to an integer
/// (ties to even) and the subtraction is exact. Plain f32 arithmetic, which
/// vectorizes on any x86-64, where nearbyintf is a library call without
/// SSE4.1.
inline float roundEven(float v) {
  constexpr float kMagic = 12582912.f;
  return (v + kMagic) - kMagic;
}

/// A buffer kept between calls (the calls come one at a time from the
/// compiled code's thread), grown when too small and never cleared; `slot`
/// picks one of the buffers of type T.
template <typename T> T *scratch(int slot, int64_t count) {
  struct Buffer {
    std::unique_ptr<T[]> data;
    int64_t size = 0;
  };
  thread_local Buffer buffers[2];
  Buffer &b = buffers[slot];
  if (b.size < count) {
    b.data.reset(new T[count]);
    b.size = count;
  }
  return b.data.get();
}

/// y = act(y) in place over a row, as the reference computes it.
void activateRow(float *y, int64_t n, int64_t activation) {
  switch (activation) {
  case kRelu:
    for (int64_t j = 0; j < n; ++j)
      y[j] = y[j] > 0 ? y[j] : 0.f;
    break;
  case kGelu: // y · Φ(y)
    for (int64_t j = 0; j < n; ++j)
      y[j] = 0.5f * y[j] * (1.f + std::erf(y[j] * 0.70710678118654752f));
    break;
  case kSilu: // y · sigmoid(y)
    for (int64_t j = 0; j < n; ++j)
      y[j] = y[j] / (1.f + std::exp(-y[j]));
    break;
  default:
    break;
  }
}

// The int8 linear's loops over rows, also compiled for AVX-512 and AVX2
// (the host's version chosen when the library loads; it is built for any
// x86-64).
#define TFM_HOST_CLONES                                                        \
  [[gnu::target_clones("arch=x86-64-v4", "avx2", "default")]]

/// u, z and s_x of x's m rows of k (int8Linear says how).
TFM_HOST_CLONES void quantizeRows(const float *rows, int64_t m, int64_t k,
                                  uint8_t *u, int32_t *zeros,
                                  float *rowScales) {
  for (int64_t i = 0; i < m; ++i) {
    const float *x = rows + i * k;
    // lo and hi in 16 lanes (vectorized), then across them.
    float lanesLo[16] = {}, lanesHi[16] = {};
    int64_t j = 0;
    for (; j + 16 <= k; j += 16)
      for (int l = 0; l < 16; ++l) {
        lanesLo[l] = x[j + l] < lanesLo[l] ? x[j + l] : lanesLo[l];
        lanesHi[l] = x[j + l] > lanesHi[l] ? x[j + l] : lanesHi[l];
      }
    for (; j < k; ++j) {
      lanesLo[0] = std::min(lanesLo[0], x[j]);
      lanesHi[0] = std::max(lanesHi[0], x[j]);
    }
    float lo = *std::min_element(lanesLo, lanesLo + 16);
    float hi = *std::max_element(lanesHi, lanesHi + 16);
    float range = hi - lo > 0 ? hi - lo : 255.f;
    float inverse = (1.f / range) * 255.f;
    float zero = roundEven(-lo * inverse);
    for (j = 0; j < k; ++j) {
      float q = roundEven(x[j] * inverse) + zero;
      q = q < 0.f ? 0.f : q > 255.f ? 255.f : q;
      u[i * k + j] = static_cast<uint8_t>(static_cast<int32_t>(q));
    }
    zeros[i] = static_cast<int32_t>(zero);
    rowScales[i] = range / 255.f;
  }
}

/// y = (f32(acc − z · sums) · s_x) · scales (+ bias) over a row of n.
TFM_HOST_CLONES void scaleBack(float *y, const int32_t *acc, int64_t n,
                               int32_t zero, float rowScale,
                               const float *scales, const int32_t *sums,
                               const float *bias) {
  for (int64_t j = 0; j < n; ++j)
    y[j] = static_cast<float>(acc[j] - zero * sums[j]) * rowScale * scales[j];
  if (bias)
    for (int64_t j = 0; j < n; ++j)
      y[j] += bias[j];
}

TFM_HOST_CLONES void addRow(float *y, const float *r, int64_t n) {
  for (int64_t j = 0; j < n; ++j)
    y[j] += r[j];
}

/// out = act(x·Wᵀ + b) + r in --precision int8's arithmetic (reference.py,
/// the same as our panel kernel's): each row of x quantized over its range
/// extended to 0,
///   lo = min(x[m, :], 0), hi = max(x[m, :], 0), r = hi − lo (255 if 0)
///   inverse = (1 / r) · 255, s_x[m] = r / 255
///   z[m] = round_even(−lo · inverse)
///   u[m, k] = clamp(round_even(x[m, k] · inverse) + z[m], 0, 255)
/// oneDNN's u8 x s8 matmul sums u · q_W exactly in s32 (acc), and here
///   y[m, n] = (f32(acc[m, n] − z[m] · Σ_k q_W[n, k]) · s_x[m]) · s_W[n] + b[n]
/// then act and the residual. oneDNN 2.6 takes one zero point per tensor
/// and scales per output column only, so the epilogue is ours; f32
/// operations are not contracted into FMAs in this file (CMakeLists.txt),
/// which would round differently from the reference. Both loops run on
/// this thread: oneDNN's threads are GNU OpenMP's, the compiled code's
/// LLVM's, and a third pool would spin against them.
void int8Linear(const View &rows, const View &w, const Memref *biasm,
                const Memref *residualm, const View &out, int64_t code) {
  int64_t m = rows.dims[0], k = rows.dims[1], n = w.dims[0];
  const QuantizedWeights &weights = quantizedWeights(w);
  uint8_t *u = scratch<uint8_t>(0, m * k);
  int32_t *acc = scratch<int32_t>(0, m * n);
  int32_t *zeros = scratch<int32_t>(1, m);
  float *rowScales = scratch<float>(0, m);
  quantizeRows(rows.data, m, k, u, zeros, rowScales);

  memory::desc src({m, k}, memory::data_type::u8, memory::format_tag::ab);
  memory::desc sums({m, n}, memory::data_type::s32, memory::format_tag::ab);
  primitive &matmul = cachedPrimitive(keyOf(8, {{m, k, n}}), [&] {
    return dnnl::matmul(dnnl::matmul::primitive_desc(
        dnnl::matmul::desc(src, weights.integers.desc, sums), cpuEngine()));
  });
  matmul.execute(cpuStream(), {{DNNL_ARG_SRC, memory(src, cpuEngine(), u)},
                               {DNNL_ARG_WEIGHTS, weights.integers.packed},
                               {DNNL_ARG_DST, memory(sums, cpuEngine(), acc)}});

  std::vector<float> biasScratch, residualScratch;
  const float *bias =
      code & kHasBias ? dense(View(biasm), biasScratch).data : nullptr;
  const float *residual = nullptr;
  if (code & kHasResidual) {
    View r(residualm);
    r.dims = out.dims;
    residual = dense(r, residualScratch).data;
  }
  for (int64_t i = 0; i < m; ++i) {
    float *y = out.data + i * n;
    scaleBack(y, acc + i * n, n, zeros[i], rowScales[i], weights.scales.data(),
              weights.sums.data(), bias);
    activateRow(y, n, code & kActivationMask);
    if (residual)
      addRow(y, residual + i * n, n);
  }
}

void linear(const Memref *xm, const Memref *wm, const Memref *biasm,
            const Memref *residualm, const Memref *outm, int64_t code) {
  View x(xm), w(wm), out(outm);
  std::vector<float> scratch;
  View rows = denseRows(x, scratch);
  if (code & kInt8Products)
    return int8Linear(rows, w, biasm, residualm, out, code);
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
