//===- Tensors.h - Tensors as oneDNN sees them ------------------*- C++ -*-===//
//
// The kernels' common ground: the process's oneDNN engine and stream, and a
// memref from the compiled code as oneDNN's sizes, strides and data, made
// dense when a primitive needs it so.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_RUNTIME_ONEDNN_TENSORS_H
#define TFM_RUNTIME_ONEDNN_TENSORS_H

#include "mlir/ExecutionEngine/CRunnerUtils.h"

#include <dnnl.hpp>

#include <cstdint>
#include <vector>

namespace tfm_runtime {
namespace onednn {

using Memref = UnrankedMemRefType<float>;
using Dims = dnnl::memory::dims;
// The oneDNN names the kernels use unqualified.
using dnnl::algorithm;
using dnnl::memory;
using dnnl::primitive;
using dnnl::prop_kind;

dnnl::engine &cpuEngine();
dnnl::stream &cpuStream();

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
  dnnl::memory::desc desc() const {
    return dnnl::memory::desc(dims, dnnl::memory::data_type::f32, strides);
  }
  dnnl::memory mem(const dnnl::memory::desc &md) const {
    return dnnl::memory(md, cpuEngine(), data);
  }
};

/// The strides of a row-major tensor of `dims`.
Dims denseStrides(const Dims &dims);
bool isDense(const View &v);
int64_t elementsOf(const View &v);
/// Copies `src` (any strides) into the dense buffer `dst` of the same dims.
void copyDense(const View &src, float *dst);
/// `v` dense: itself if it is laid out so, else a copy into `scratch`.
View dense(const View &v, std::vector<float> &scratch);
/// `v` as a dense [rows, last] matrix (a copy into `scratch` if need be).
View denseRows(const View &v, std::vector<float> &scratch);

} // namespace onednn
} // namespace tfm_runtime

#endif // TFM_RUNTIME_ONEDNN_TENSORS_H
