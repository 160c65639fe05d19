//===- Status.h - The runtime's error type ----------------------*- C++ -*-===//
//
// tfm_status is opaque in the C API; the runtime's sources share its
// definition here.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_RUNTIME_STATUS_H
#define TFM_RUNTIME_STATUS_H

#include "tfm/runtime.h"

#include <fmt/format.h>

#include <cstdint>
#include <string>
#include <utility>

struct tfm_status_t {
  std::string message;
  /// The sentence of the batch (from 0) the error concerns, or -1.
  int32_t sentence = -1;
};

namespace tfm_runtime {
// Out of line so that a leak report names it: scripts/lsan-suppressions.txt
// lets a status that is still held when the translator exits on an error go.
[[gnu::noinline]] inline tfm_status makeError(std::string message) {
  return new tfm_status_t{std::move(message)};
}

/// An error whose message is fmt::format(format, args...): at least one
/// argument, so that a plain message stays the overload above.
template <typename Arg, typename... Args>
tfm_status makeError(fmt::format_string<Arg, Args...> format, Arg &&arg,
                     Args &&...args) {
  return makeError(
      fmt::format(format, std::forward<Arg>(arg), std::forward<Args>(args)...));
}
/// An error about sentence `sentence` (from 0) of a batch: "sentence N"
/// (from 1) and fmt::format(format, args...) for a reader,
/// tfm_status_sentence for a program.
template <typename... Args>
tfm_status makeSentenceError(int32_t sentence,
                             fmt::format_string<Args...> format,
                             Args &&...args) {
  tfm_status status =
      makeError(fmt::format("sentence {}", sentence + 1) +
                fmt::format(format, std::forward<Args>(args)...));
  status->sentence = sentence;
  return status;
}
} // namespace tfm_runtime

#endif // TFM_RUNTIME_STATUS_H
