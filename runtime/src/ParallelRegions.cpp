//===- ParallelRegions.cpp - Counting the OpenMP regions begun --*- C++ -*-===//
//
// The OpenMP runtime looks for `ompt_start_tool` when it starts; this one
// registers a tool only if the count was asked for by then, and the tool
// counts the parallel-begin events.
//
//===----------------------------------------------------------------------===//

#include "runtime/src/ParallelRegions.h"

#include <omp-tools.h>

#include <atomic>

namespace {

std::atomic<bool> requested{false}, counting{false};
std::atomic<uint64_t> begun{0};

void onParallelBegin(ompt_data_t *, const ompt_frame_t *, ompt_data_t *,
                     unsigned int, int, const void *) {
  begun.fetch_add(1, std::memory_order_relaxed);
}

int initializeTool(ompt_function_lookup_t lookup, int, ompt_data_t *) {
  auto setCallback =
      reinterpret_cast<ompt_set_callback_t>(lookup("ompt_set_callback"));
  if (!setCallback || setCallback(ompt_callback_parallel_begin,
                                  reinterpret_cast<ompt_callback_t>(
                                      &onParallelBegin)) != ompt_set_always)
    return 0;
  counting = true;
  return 1;
}

void finalizeTool(ompt_data_t *) {}

} // namespace

extern "C" ompt_start_tool_result_t *ompt_start_tool(unsigned int,
                                                     const char *) {
  static ompt_start_tool_result_t tool = {&initializeTool, &finalizeTool, {0}};
  return requested ? &tool : nullptr;
}

namespace tfm_runtime {

void countParallelRegions() { requested = true; }

std::optional<uint64_t> parallelRegionsBegun() {
  if (!counting)
    return std::nullopt;
  return begun.load(std::memory_order_relaxed);
}

} // namespace tfm_runtime
