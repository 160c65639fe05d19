//===- Buffer.cpp - An aligned float buffer ---------------------*- C++ -*-===//
//
// Out of line: the runtime throws std::bad_alloc, the unit tests that use
// the buffer's owners are built without exceptions.
//
//===----------------------------------------------------------------------===//

#include "runtime/src/Buffer.h"

#include <new>

void tfm_runtime::Buffer::resize(size_t n) {
  std::free(data);
  data = nullptr;
  size = n;
  if (n)
    data = static_cast<float *>(
        std::aligned_alloc(64, (n * sizeof(float) + 63) / 64 * 64));
  if (n && !data)
    throw std::bad_alloc();
}
