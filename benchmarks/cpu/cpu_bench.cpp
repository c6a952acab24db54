// cannl's generated CPU code side by side with OpenBLAS sgemm and STREAM-style C loops:
//   sgemm n x n x n, n in {256, 512, 1024, 2048}, on 1 and 2 threads: GFLOP/s (counter "flops")
//   triad a = b + 3 c over 2^23 floats and row sums of a 4096 x 2048 matrix: bytes/s
// BM_cannl_tuned_sgemm is the same contraction compiled by tune::tune (the autotuner's measured
// schedule search on this machine; its schedule cache under build_files/ makes a second run search
// nothing). BM_cc_tile_sgemm times the C backend's TileMma rendering alone (a hand-built TileMma statement
// compiled by the cc backend), independent of whether the front end and the default schedule
// produce one. Each cannl case compiles its routine once (outside the timing) through the normal compile path
// (tensor -> optimizer -> default CPU schedule -> C backend), with cc_threads set to the case's
// thread count. Run it through benchmarks/cpu/report.sh for the ratio table.
#include <benchmark/benchmark.h>

#include <map>
#include <span>
#include <memory>
#include <random>
#include <tuple>

#include "cannl/backends/backend.h"
#include "cannl/cannl.h"
#include "cannl/ir/loop_ir.h"
#include "cannl/support/config.h"
#include "cannl/tune/tune.h"
#include "stream_loops.h"

extern "C" {
// OpenBLAS's CBLAS entry points (declared here so any cblas.h flavour works).
void cblas_sgemm(int order, int trans_a, int trans_b, int m, int n, int k, float alpha, const float* a,
                 int lda, const float* b, int ldb, float beta, float* c, int ldc);
void openblas_set_num_threads(int threads);
}

namespace cannl::cpu_bench {
namespace {

using Dims = std::vector<std::int64_t>;
constexpr int kRowMajor = 101, kNoTrans = 111;

std::vector<double> random_values(std::size_t n, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  std::vector<double> out(n);
  for (auto& x : out) x = dist(gen);
  return out;
}

/// A compiled cannl computation: one routine in its own context.
struct Compiled {
  runtime::Context ctx = runtime::Context::cpu();
  runtime::Routine routine;
};

/// Compiles `make()`'s output once per key with cc_threads = threads: the default compile, or
/// with `tuned` the autotuner's pick.
template <class Make>
Compiled& compiled(const std::string& key, int threads, Make make, bool tuned = false) {
  static std::map<std::string, std::unique_ptr<Compiled>> cache;
  auto& slot = cache[key + "/" + std::to_string(threads) + (tuned ? "/tuned" : "")];
  if (!slot) {
    config::set_override("cc_threads", std::to_string(threads));
    slot = std::make_unique<Compiled>();
    Tensor out = make();
    train::upload_literals(slot->ctx, {out});
    const std::string name = "bench_" + key + (tuned ? "_tuned" : "");
    slot->routine = tuned ? tune::tune(slot->ctx, forward_code({out}), name)
                          : train::compile_forward(slot->ctx, {out}, name);
    config::set_override("cc_threads", "");
  }
  return *slot;
}

void run_cannl(benchmark::State& state, Compiled& c) {
  c.ctx.run(c.routine);  // warm-up
  for (auto _ : state) c.ctx.run(c.routine);
}

void time_cannl_sgemm(benchmark::State& state, bool tuned) {
  const std::int64_t n = state.range(0);
  const int threads = static_cast<int>(state.range(1));
  auto make = [n] {
    const auto size = static_cast<std::size_t>(n * n);
    Tensor x = literal("x", random_values(size, 1), {.batch = Dims{n}, .output = Dims{n}});
    Tensor w = literal("w", random_values(size, 2), {.input = Dims{n}, .output = Dims{n}});
    return w * x;
  };
  auto& c = compiled("sgemm" + std::to_string(n), threads, make, tuned);
  run_cannl(state, c);
  state.counters["flops"] = benchmark::Counter(2.0 * n * n * n, benchmark::Counter::kIsIterationInvariantRate);
}

void BM_cannl_sgemm(benchmark::State& state) { time_cannl_sgemm(state, false); }
void BM_cannl_tuned_sgemm(benchmark::State& state) { time_cannl_sgemm(state, true); }

/// d[i, j] = fma(a[i, k], b[k, j], d[i, j]) over n x n x n as a fused TileMma (fallback: the plain
/// nest), the form the default pipeline produces under the fuse_multiply_add licence.
backends::CompileRequest tile_matmul(std::int64_t n) {
  using namespace ir;
  auto a = make_node("a", DType::F32, {n, n});
  auto b = make_node("b", DType::F32, {n, n});
  auto d = make_node("d", DType::F32, {n, n});
  const Symbol i = fresh_symbol(), j = fresh_symbol(), k = fresh_symbol();
  auto it = [](Symbol x) { return AxisIndex::iterator(x); };
  const std::vector<AxisIndex> di{it(i), it(j)}, ai{it(i), it(k)}, bi{it(k), it(j)};
  auto value = apply(Op::Fma, DType::F32, {get(a, ai), get(b, bi), get(d, di)});
  auto nest = for_loop(i, 0, n, for_loop(j, 0, n, for_loop(k, 0, n, set(d, di, value))));
  TileMma t{{d, di}, {a, ai}, {b, bi}, {i, 0, n}, {j, 0, n}, {k, 0, n}, Op::Add, true, DType::F32, nest};
  return {LoweredRoutine{"tile_sgemm_" + std::to_string(n), seq({zero_out(d), tile_mma(t)}), {}}, {a, b, d}};
}

void BM_cc_tile_sgemm(benchmark::State& state) {
  const std::int64_t n = state.range(0);
  config::set_override("cc_threads", std::to_string(state.range(1)));
  auto backend = backends::make_cc_backend();
  const auto request = tile_matmul(n);
  auto exe = backend->compile(request);
  config::set_override("cc_threads", "");
  std::vector<std::unique_ptr<backends::Buffer>> owned;
  std::vector<backends::Buffer*> buffers;
  for (const auto& node : request.params) {
    owned.push_back(backend->allocate(node->size_in_bytes()));
    std::vector<float> values(static_cast<std::size_t>(node->num_elements()));
    const auto r = random_values(values.size(), static_cast<unsigned>(owned.size()));
    for (std::size_t x = 0; x < values.size(); ++x) values[x] = static_cast<float>(r[x]);
    owned.back()->write(std::as_bytes(std::span(values)));
    buffers.push_back(owned.back().get());
  }
  exe->run(buffers, {});
  for (auto _ : state) exe->run(buffers, {});
  state.counters["flops"] = benchmark::Counter(2.0 * n * n * n, benchmark::Counter::kIsIterationInvariantRate);
}

void BM_openblas_sgemm(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  openblas_set_num_threads(static_cast<int>(state.range(1)));
  const auto size = static_cast<std::size_t>(n) * static_cast<std::size_t>(n);
  std::vector<float> a(size), b(size), c(size);
  const auto va = random_values(size, 1), vb = random_values(size, 2);
  for (std::size_t i = 0; i < size; ++i) {
    a[i] = static_cast<float>(va[i]);
    b[i] = static_cast<float>(vb[i]);
  }
  // The same contraction as cannl's y[b, o] = sum_i w[o, i] x[b, i] is C = X W^T; time the
  // untransposed form, OpenBLAS's best case.
  for (auto _ : state) {
    cblas_sgemm(kRowMajor, kNoTrans, kNoTrans, n, n, n, 1.0f, a.data(), n, b.data(), n, 0.0f, c.data(), n);
    benchmark::DoNotOptimize(c.data());
  }
  state.counters["flops"] = benchmark::Counter(2.0 * n * n * n, benchmark::Counter::kIsIterationInvariantRate);
}

constexpr std::int64_t kTriadN = std::int64_t{1} << 23;
constexpr std::int64_t kRows = 4096, kCols = 2048;

void BM_cannl_triad(benchmark::State& state) {
  const int threads = static_cast<int>(state.range(0));
  auto& c = compiled("triad", threads, [] {
    Tensor b = literal("b", random_values(kTriadN, 3), {.output = Dims{kTriadN}});
    Tensor cc = literal("c", random_values(kTriadN, 4), {.output = Dims{kTriadN}});
    return b + 3.0 * cc;
  });
  run_cannl(state, c);
  state.SetBytesProcessed(state.iterations() * kTriadN * 12);
}

void BM_stream_triad(benchmark::State& state) {
  const int threads = static_cast<int>(state.range(0));
  std::vector<float> a(kTriadN), b(kTriadN, 1.0f), c(kTriadN, 2.0f);
  stream_triad(a.data(), b.data(), c.data(), 3.0f, kTriadN, threads);
  for (auto _ : state) {
    stream_triad(a.data(), b.data(), c.data(), 3.0f, kTriadN, threads);
    benchmark::DoNotOptimize(a.data());
  }
  state.SetBytesProcessed(state.iterations() * kTriadN * 12);
}

void BM_cannl_row_sums(benchmark::State& state) {
  const int threads = static_cast<int>(state.range(0));
  auto& c = compiled("rowsum", threads, [] {
    Tensor m = literal("m", random_values(kRows * kCols, 5), {.batch = Dims{kRows}, .output = Dims{kCols}});
    return sum(m, "...|...->c => ...|...->");
  });
  run_cannl(state, c);
  state.SetBytesProcessed(state.iterations() * kRows * kCols * 4);
}

void BM_stream_row_sums(benchmark::State& state) {
  const int threads = static_cast<int>(state.range(0));
  std::vector<float> m(kRows * kCols, 0.5f), r(kRows);
  row_sums(r.data(), m.data(), kRows, kCols, threads);
  for (auto _ : state) {
    row_sums(r.data(), m.data(), kRows, kCols, threads);
    benchmark::DoNotOptimize(r.data());
  }
  state.SetBytesProcessed(state.iterations() * kRows * kCols * 4);
}

void sgemm_args(benchmark::internal::Benchmark* b) {
  for (int threads : {1, 2}) {
    for (int n : {256, 512, 1024, 2048}) b->Args({n, threads});
  }
  b->UseRealTime()->Unit(benchmark::kMillisecond);
}

BENCHMARK(BM_cannl_sgemm)->Apply(sgemm_args);
BENCHMARK(BM_cannl_tuned_sgemm)->Apply(sgemm_args);
BENCHMARK(BM_cc_tile_sgemm)->Apply(sgemm_args);
BENCHMARK(BM_openblas_sgemm)->Apply(sgemm_args);
BENCHMARK(BM_cannl_triad)->Arg(1)->Arg(2)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_stream_triad)->Arg(1)->Arg(2)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_cannl_row_sums)->Arg(1)->Arg(2)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_stream_row_sums)->Arg(1)->Arg(2)->UseRealTime()->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace cannl::cpu_bench

BENCHMARK_MAIN();
