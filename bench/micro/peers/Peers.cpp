//===- Peers.cpp - OpenBLAS and oneDNN for the micro-benchmarks -----------===//
//
// Built with exceptions (plain add_library): the oneDNN C++ API throws
// dnnl::error, caught here and returned as messages.
//
//===----------------------------------------------------------------------===//

#include "bench/micro/peers/Peers.h"

#include <cblas.h>
#include <dlfcn.h>
#include <oneapi/dnnl/dnnl.hpp>

#include <memory>

namespace tfm_bench {

void setThreads(int threads) {
  openblas_set_num_threads(threads);
  // Each OpenMP runtime keeps its own thread count; both may be loaded.
  for (const char *library : {"libomp.so.5", "libomp.so", "libgomp.so.1"})
    if (void *handle = dlopen(library, RTLD_NOW | RTLD_NOLOAD)) {
      if (auto set = reinterpret_cast<void (*)(int)>(
              dlsym(handle, "omp_set_num_threads")))
        set(threads);
      dlclose(handle);
    }
}

void openblasLinear(const float *x, const float *w, float *y, int64_t m,
                    int64_t k, int64_t n) {
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, n, k, 1.0f, x, k, w,
              k, 0.0f, y, n);
}

class OneDnnLinear {
public:
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream{engine};
  dnnl::memory src, weights, dst;
  dnnl::matmul matmul;
};

OneDnnLinear *oneDnnLinearCreate(const float *w, int64_t m, int64_t k,
                                 int64_t n, std::string &error) {
  using dnnl::memory;
  try {
    auto linear = std::make_unique<OneDnnLinear>();
    memory::desc srcDesc({m, k}, memory::data_type::f32,
                         memory::format_tag::ab);
    memory::desc dstDesc({m, n}, memory::data_type::f32,
                         memory::format_tag::ab);
    // The checkpoint's [N, K] row-major matrix is the [K, N] operand in
    // column-major ("ba") order; oneDNN picks its own layout ("any").
    memory::desc userWeights({k, n}, memory::data_type::f32,
                             memory::format_tag::ba);
    memory::desc anyWeights({k, n}, memory::data_type::f32,
                            memory::format_tag::any);
    dnnl::matmul::primitive_desc pd(
        dnnl::matmul::desc(srcDesc, anyWeights, dstDesc), linear->engine);
    memory user(userWeights, linear->engine, const_cast<float *>(w));
    linear->weights = memory(pd.weights_desc(), linear->engine);
    dnnl::reorder(user, linear->weights)
        .execute(linear->stream, user, linear->weights);
    linear->stream.wait();
    linear->src = memory(srcDesc, linear->engine, DNNL_MEMORY_NONE);
    linear->dst = memory(dstDesc, linear->engine, DNNL_MEMORY_NONE);
    linear->matmul = dnnl::matmul(pd);
    return linear.release();
  } catch (const dnnl::error &e) {
    error = std::string("oneDNN: ") + e.what();
    return nullptr;
  }
}

bool oneDnnLinearRun(OneDnnLinear *linear, const float *x, float *y,
                     std::string &error) {
  try {
    linear->src.set_data_handle(const_cast<float *>(x));
    linear->dst.set_data_handle(y);
    linear->matmul.execute(linear->stream, {{DNNL_ARG_SRC, linear->src},
                                            {DNNL_ARG_WEIGHTS, linear->weights},
                                            {DNNL_ARG_DST, linear->dst}});
    linear->stream.wait();
    return true;
  } catch (const dnnl::error &e) {
    error = std::string("oneDNN: ") + e.what();
    return false;
  }
}

void oneDnnLinearDestroy(OneDnnLinear *linear) { delete linear; }

std::string oneDnnVersion() {
  const dnnl_version_t *v = dnnl_version();
  return std::to_string(v->major) + "." + std::to_string(v->minor) + "." +
         std::to_string(v->patch) + " (" + v->hash + ")";
}

std::string openblasVersion() { return openblas_get_config(); }

} // namespace tfm_bench
