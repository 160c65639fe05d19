//===- Tensors.cpp - Tensors as oneDNN sees them ----------------*- C++ -*-===//
//
// One engine and one stream for the process: the compiled code calls the
// kernels from one thread at a time.
//
//===----------------------------------------------------------------------===//

#include "runtime/src/onednn/Tensors.h"

#include "runtime/src/onednn/PrimitiveCache.h"

#include <cstring>

namespace tfm_runtime {
namespace onednn {

dnnl::engine &cpuEngine() {
  static dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

dnnl::stream &cpuStream() {
  static dnnl::stream stream(cpuEngine());
  return stream;
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

void copyDense(const View &src, float *dst) {
  if (isDense(src)) {
    std::memcpy(dst, src.data, sizeof(float) * elementsOf(src));
    return;
  }
  memory::desc from = src.desc();
  memory::desc to(src.dims, memory::data_type::f32, denseStrides(src.dims));
  primitive &copy =
      cachedPrimitive(keyOf(PrimitiveKind::Copy, {src.dims, src.strides}), [&] {
        return dnnl::reorder(
            dnnl::reorder::primitive_desc(cpuEngine(), from, cpuEngine(), to));
      });
  memory a = src.mem(from), b(to, cpuEngine(), dst);
  copy.execute(cpuStream(), {{DNNL_ARG_FROM, a}, {DNNL_ARG_TO, b}});
}

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

View denseRows(const View &v, std::vector<float> &scratch) {
  View rows = dense(v, scratch);
  rows.dims = {elementsOf(v) / v.last(), v.last()};
  rows.strides = {v.last(), 1};
  return rows;
}

} // namespace onednn
} // namespace tfm_runtime
