//===- Peers.h - The libraries the micro-benchmarks measure ----*- C++ -*-===//
//
// OpenBLAS sgemm and oneDNN matmul behind an interface without exceptions,
// so that tfm-bench (built with LLVM's -fno-exceptions) can call them; the
// oneDNN C++ API, which throws, stays inside Peers.cpp.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_BENCH_MICRO_PEERS_H
#define TFM_BENCH_MICRO_PEERS_H

#include <cstdint>
#include <string>

namespace tfm_bench {

/// Threads of every runtime in the process: OpenBLAS's pool, and each
/// OpenMP runtime loaded (LLVM's libomp for the compiled code, GNU libgomp
/// for oneDNN).
void setThreads(int threads);

/// y[M, N] = x[M, K] · w[N, K]ᵀ with cblas_sgemm (w in the checkpoint's
/// [out_features, in_features] layout, row-major).
void openblasLinear(const float *x, const float *w, float *y, int64_t m,
                    int64_t k, int64_t n);

/// The same product as a oneDNN matmul primitive, created once for the
/// shape, with the weights reordered once into the layout oneDNN prefers
/// (as an application would at load time); `run` executes only the matmul.
class OneDnnLinear;
/// Returns null and sets `error` when oneDNN refuses.
OneDnnLinear *oneDnnLinearCreate(const float *w, int64_t m, int64_t k,
                                 int64_t n, std::string &error);
bool oneDnnLinearRun(OneDnnLinear *linear, const float *x, float *y,
                     std::string &error);
void oneDnnLinearDestroy(OneDnnLinear *linear);

/// "2.6.3 (cpu runtime: OpenMP, isa: ...)" and OpenBLAS's config string.
std::string oneDnnVersion();
std::string openblasVersion();

} // namespace tfm_bench

#endif // TFM_BENCH_MICRO_PEERS_H
