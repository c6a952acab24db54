// STREAM-style reference loops (see stream_loops.h).
#include "stream_loops.h"

namespace cannl::cpu_bench {

void stream_triad(float* a, const float* b, const float* c, float s, std::int64_t n, int threads) {
#pragma omp parallel for schedule(static) num_threads(threads)
  for (std::int64_t i = 0; i < n; ++i) a[i] = b[i] + s * c[i];
}

void row_sums(float* r, const float* m, std::int64_t rows, std::int64_t cols, int threads) {
#pragma omp parallel for schedule(static) num_threads(threads)
  for (std::int64_t i = 0; i < rows; ++i) {
    float acc = 0;
#pragma omp simd reduction(+ : acc)
    for (std::int64_t j = 0; j < cols; ++j) acc += m[i * cols + j];
    r[i] = acc;
  }
}

}  // namespace cannl::cpu_bench
