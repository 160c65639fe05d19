//===- PrimitiveCache.cpp - oneDNN primitives made once ---------*- C++ -*-===//
//===----------------------------------------------------------------------===//

#include "runtime/src/onednn/PrimitiveCache.h"

namespace tfm_runtime {
namespace onednn {

std::vector<int64_t> keyOf(PrimitiveKind kind,
                           std::initializer_list<Dims> parts, int64_t code) {
  std::vector<int64_t> key = {static_cast<int64_t>(kind), code};
  for (const Dims &p : parts) {
    key.push_back(static_cast<int64_t>(p.size()));
    key.insert(key.end(), p.begin(), p.end());
  }
  return key;
}

} // namespace onednn
} // namespace tfm_runtime
