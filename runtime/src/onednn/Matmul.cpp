//===- Matmul.cpp - Batched products ----------------------------*- C++ -*-===//
//
// out[b.., i, j] = alpha · Σ_k A[b.., i, k] · B[b.., k, j]: attention's
// scores and its weighted values, either operand transposed by its strides.
//
//===----------------------------------------------------------------------===//

#include "runtime/src/onednn/Kernels.h"

#include "runtime/src/onednn/PrimitiveCache.h"
#include "tfm/abi/OneDnnAbi.h"

#include <cstring>
#include <utility>

namespace tfm_runtime {
namespace onednn {

void matmul(const Memref *am, const Memref *bm, const Memref *outm, float alpha,
            int64_t code) {
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
      keyOf(PrimitiveKind::Matmul,
            {a.dims, a.strides, b.dims, b.strides, out.dims}, alphaBits),
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

} // namespace onednn
} // namespace tfm_runtime
