//===- Weights.cpp - Weight matrices repacked once --------------*- C++ -*-===//
//
// Each cache is keyed by where the matrix is, its shape, the product's
// type and a sample of its values.
//
//===----------------------------------------------------------------------===//

#include "runtime/src/onednn/Weights.h"

#include "tfm/abi/Panels.h"

#include <cstring>
#include <map>
#include <mutex>

namespace tfm_runtime {
namespace onednn {
namespace {

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

} // namespace

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
    tfm_runtime::Int8Row r = tfm_runtime::quantizeInt8Row(
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

} // namespace onednn
} // namespace tfm_runtime
