//===- Status.h - The runtime's error type ----------------------*- C++ -*-===//
//
// tfm_status is opaque in the C API; the runtime's sources share its
// definition here.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_RUNTIME_STATUS_H
#define TFM_RUNTIME_STATUS_H

#include "tfm/runtime.h"

#include <string>

struct tfm_status_t {
  std::string message;
};

namespace tfm_runtime {
// Out of line so that a leak report names it: scripts/lsan-suppressions.txt
// lets a status that is still held when the translator exits on an error go.
[[gnu::noinline]] inline tfm_status makeError(std::string message) {
  return new tfm_status_t{std::move(message)};
}
} // namespace tfm_runtime

#endif // TFM_RUNTIME_STATUS_H
