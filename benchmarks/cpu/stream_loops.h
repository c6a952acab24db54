#pragma once
// STREAM-style reference loops (OpenMP, static schedule) for the CPU benchmark.
#include <cstdint>

namespace cannl::cpu_bench {

/// a[i] = b[i] + s * c[i]
void stream_triad(float* a, const float* b, const float* c, float s, std::int64_t n, int threads);
/// r[i] = sum_j m[i * cols + j]
void row_sums(float* r, const float* m, std::int64_t rows, std::int64_t cols, int threads);

}  // namespace cannl::cpu_bench
