//===- MemrefCopy.cpp - The copy that compiled code calls -------*- C++ -*-===//
//
// MLIR lowers a memref.copy between non-contiguous memrefs to a call to
// `memrefCopy(elementSize, source, target)` on unranked descriptors. The
// translator must not depend on MLIR's runner library, so the runtime
// provides it: a strided copy, innermost dimension by memcpy when it is
// contiguous in both.
//
//===----------------------------------------------------------------------===//

#include <cstdint>
#include <cstring>
#include <vector>

namespace {
/// The ranked descriptor an unranked one points at: {allocated, aligned,
/// offset, sizes[rank], strides[rank]}, all words.
struct RankedView {
  char *aligned;
  int64_t offset;
  const int64_t *sizes;
  const int64_t *strides;
};

struct Unranked {
  int64_t rank;
  void *descriptor;
};

RankedView view(const Unranked &m) {
  auto *words = static_cast<int64_t *>(m.descriptor);
  return {reinterpret_cast<char *>(words[1]), words[2], words + 3,
          words + 3 + m.rank};
}
} // namespace

extern "C" void memrefCopy(int64_t elementSize, Unranked *source,
                           Unranked *target) {
  int64_t rank = source->rank;
  RankedView src = view(*source), dst = view(*target);
  char *from = src.aligned + src.offset * elementSize;
  char *to = dst.aligned + dst.offset * elementSize;
  if (rank == 0) {
    std::memcpy(to, from, elementSize);
    return;
  }
  for (int64_t d = 0; d < rank; ++d)
    if (src.sizes[d] == 0)
      return;
  bool innerContiguous =
      src.strides[rank - 1] == 1 && dst.strides[rank - 1] == 1;
  int64_t inner = innerContiguous ? src.sizes[rank - 1] : 1;
  int64_t outerRank = innerContiguous ? rank - 1 : rank;
  std::vector<int64_t> index(outerRank, 0);
  while (true) {
    int64_t s = 0, t = 0;
    for (int64_t d = 0; d < outerRank; ++d) {
      s += index[d] * src.strides[d];
      t += index[d] * dst.strides[d];
    }
    std::memcpy(to + t * elementSize, from + s * elementSize,
                inner * elementSize);
    // Next index, odometer style.
    int64_t d = outerRank - 1;
    for (; d >= 0; --d) {
      if (++index[d] < src.sizes[d])
        break;
      index[d] = 0;
    }
    if (d < 0)
      return;
  }
}
