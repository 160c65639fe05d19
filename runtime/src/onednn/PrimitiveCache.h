//===- PrimitiveCache.h - oneDNN primitives made once -----------*- C++ -*-===//
//
// A primitive is created once per kernel, shape, layout and options and
// kept for the process: creating one costs far more than running it.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_RUNTIME_ONEDNN_PRIMITIVECACHE_H
#define TFM_RUNTIME_ONEDNN_PRIMITIVECACHE_H

#include "runtime/src/onednn/Tensors.h"

#include <dnnl.hpp>

#include <cstdint>
#include <initializer_list>
#include <map>
#include <mutex>
#include <vector>

namespace tfm_runtime {
namespace onednn {

/// The first word of a primitive's key: what it does.
enum class PrimitiveKind : int64_t {
  Copy = 0,        // a strided tensor into a dense one (copyDense)
  Linear = 1,      // f32 or bf16 linear with its post-ops
  Matmul = 2,      // batched product
  Binary = 3,      // elementwise a op b
  LayerNorm = 4,   // layer normalization
  Softmax = 5,     // softmax over the last axis
  Eltwise = 6,     // elementwise f(x)
  RoundBf16 = 7,   // a linear's rows rounded to bf16
  Int8Product = 8, // the int8 linear's u8 x s8 -> s32 product
};

/// Primitives by a key of everything they were created for (each call site
/// keeps its own: one map per `Make`).
template <typename Make>
dnnl::primitive &cachedPrimitive(const std::vector<int64_t> &key, Make make) {
  static std::map<std::vector<int64_t>, dnnl::primitive> cache;
  static std::mutex mutex;
  std::lock_guard<std::mutex> lock(mutex);
  auto it = cache.find(key);
  if (it == cache.end())
    it = cache.emplace(key, make()).first;
  return it->second;
}

/// The key of a `kind` primitive over tensors of the given dims (and
/// strides), with `code` for its options.
std::vector<int64_t> keyOf(PrimitiveKind kind,
                           std::initializer_list<Dims> parts, int64_t code = 0);

} // namespace onednn
} // namespace tfm_runtime

#endif // TFM_RUNTIME_ONEDNN_PRIMITIVECACHE_H
