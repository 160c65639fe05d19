//===- Weights.h - Weight matrices repacked once ----------------*- C++ -*-===//
//
// A linear's weight matrix [N, K] is reordered (and converted, or
// quantized) once, on first use, into the layout oneDNN's matmul prefers,
// and kept for the process.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_RUNTIME_ONEDNN_WEIGHTS_H
#define TFM_RUNTIME_ONEDNN_WEIGHTS_H

#include "runtime/src/onednn/Tensors.h"

#include <dnnl.hpp>

#include <cstdint>
#include <vector>

namespace tfm_runtime {
namespace onednn {

/// A weight matrix [N, K] in the layout oneDNN's matmul picks for it, which
/// does not depend on the number of rows (measured on oneDNN 2.6: the same
/// for M = 1 .. 1024), so one copy serves every batch size.
struct PackedWeights {
  dnnl::memory::desc desc;
  dnnl::memory packed;
};

/// The f32 matrix w in oneDNN's layout for a matmul of `type` (f32, or bf16
/// rounded to nearest even by the reorder).
const PackedWeights &packedWeights(const View &w, dnnl::memory::data_type type);

/// A weight matrix [N, K] as --precision int8 makes it (tfm/abi/Panels.h,
/// the quantization our panels hold): per output feature n the integers
/// q_W[n, :] in [-127, 127], their scale s_W[n] and sum Σ_k q_W[n, k]; the
/// integers in oneDNN's layout for a u8 x s8 matmul.
struct QuantizedWeights {
  PackedWeights integers;
  std::vector<float> scales;
  std::vector<int32_t> sums;
};

const QuantizedWeights &quantizedWeights(const View &w);

} // namespace onednn
} // namespace tfm_runtime

#endif // TFM_RUNTIME_ONEDNN_WEIGHTS_H
