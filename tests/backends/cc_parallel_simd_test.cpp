// Parallel and SIMD rendering of the cc backend: Grid loops as OpenMP chunks, Vectorized loops as
// vector-extension code, TileMma as the packed register-tiled matmul. Each is checked against
// the reference interpreter (bitwise where the rendering keeps the serial rounding, with a
// tolerance where the annotation licenses re-association) and, for Grid, across thread and
// chunk counts.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "backends/run_util.h"
#include "cannl/backends/backend.h"
#include "cannl/ir/loop_ir.h"
#include "cannl/support/config.h"
#include "cannl/support/error.h"

namespace cannl {
namespace {

using namespace cannl::ir;
using test_util::Bytes;
using test_util::bytes_of;
using test_util::cc;
using test_util::ConfigGuard;
using test_util::run_on;
using test_util::values_of;

std::vector<float> random_floats(std::size_t n, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> out(n);
  for (auto& x : out) x = dist(gen);
  return out;
}

std::shared_ptr<backends::Backend> interpreter() {
  static auto backend = backends::make_interpreter_backend();
  return backend;
}

std::string source_of(const backends::CompileRequest& r) { return cc()->compile(r)->source(); }

// ---- matmul tiles ----

struct MatmulShape {
  std::int64_t batch = 1, m = 0, n = 0, k = 0;
  std::int64_t tile_begin = 0;  // the tile covers i in [tile_begin, m)
  bool b_transposed = false;    // b stored as [batch, n, k]
  bool fused = true;            // d = fma(a, b, d) rather than d = d + a * b
  bool a_transposed = false;    // a stored as [batch, k, m]
  bool zeroed = false;          // d zeroed before the tile (the driver's zero-start kernels)
};

// for bb: TileMma over (i, j, k) of d[bb, i, j] += a[bb, i, k] * b[bb, k, j]; params a, b, d.
backends::CompileRequest matmul(const MatmulShape& s, bool tensorized = true) {
  auto a = make_node("a", DType::F32, s.a_transposed ? std::vector<std::int64_t>{s.batch, s.k, s.m}
                                                     : std::vector<std::int64_t>{s.batch, s.m, s.k});
  auto b = make_node("b", DType::F32, s.b_transposed ? std::vector<std::int64_t>{s.batch, s.n, s.k}
                                                     : std::vector<std::int64_t>{s.batch, s.k, s.n});
  auto d = make_node("d", DType::F32, {s.batch, s.m, s.n});
  const Symbol bb = fresh_symbol(), i = fresh_symbol(), j = fresh_symbol(), k = fresh_symbol();
  auto it = [](Symbol x) { return AxisIndex::iterator(x); };
  const std::vector<AxisIndex> di{it(bb), it(i), it(j)};
  const std::vector<AxisIndex> ai = s.a_transposed ? std::vector<AxisIndex>{it(bb), it(k), it(i)}
                                                   : std::vector<AxisIndex>{it(bb), it(i), it(k)};
  const std::vector<AxisIndex> bi = s.b_transposed ? std::vector<AxisIndex>{it(bb), it(j), it(k)}
                                                   : std::vector<AxisIndex>{it(bb), it(k), it(j)};
  auto value = s.fused ? apply(Op::Fma, DType::F32, {get(a, ai), get(b, bi), get(d, di)})
                       : apply(Op::Add, DType::F32,
                               {get(d, di), apply(Op::Mul, DType::F32, {get(a, ai), get(b, bi)})});
  auto nest = for_loop(i, s.tile_begin, s.m,
                       for_loop(j, 0, s.n, for_loop(k, 0, s.k, set(d, di, value, "d =+ a * b"))));
  StmtRef body = nest;
  if (tensorized) {
    TileMma t{{d, di}, {a, ai}, {b, bi}, {i, s.tile_begin, s.m}, {j, 0, s.n}, {k, 0, s.k},
              Op::Add, s.fused, DType::F32, nest};
    body = tile_mma(t);
  }
  if (s.zeroed) body = seq({zero_out(d), body});
  return {LoweredRoutine{"mm", for_loop(bb, 0, s.batch, body), {}}, {a, b, d}};
}

std::vector<Bytes> matmul_inputs(const MatmulShape& s) {
  const auto sz = [](std::int64_t x) { return static_cast<std::size_t>(x); };
  return {bytes_of(random_floats(sz(s.batch * s.m * s.k), 1)),
          bytes_of(random_floats(sz(s.batch * s.k * s.n), 2)),
          bytes_of(random_floats(sz(s.batch * s.m * s.n), 3))};
}

TEST(CcTileMma, FusedTileIsBitwiseTheFallback) {
  // Odd sizes: every edge (rows, columns, k block) is peeled.
  const MatmulShape s{1, 37, 53, 29};
  const auto r = matmul(s);
  ASSERT_NE(source_of(r).find("cannl_sgemm_x"), std::string::npos) << "the tile was not rendered";
  EXPECT_EQ(run_on(*cc(), r, matmul_inputs(s)), run_on(*interpreter(), r, matmul_inputs(s)));
}

TEST(CcTileMma, StridedOperandsBatchesAndOffsetTiles) {
  // b read transposed (unit stride along k), three batches (base offsets move with bb), a tile
  // starting at row 5 (rows 0..4 untouched), k spanning several cache blocks.
  // The oracle is the untensorized nest compiled by cc (bitwise the interpreter, see
  // cc_execution_test), since the interpreter is slow at this size.
  const MatmulShape s{3, 41, 70, 800, 5, true, true};
  const auto r = matmul(s);
  ASSERT_NE(source_of(r).find("cannl_sgemm_x"), std::string::npos);
  EXPECT_EQ(run_on(*cc(), r, matmul_inputs(s)), run_on(*cc(), matmul(s, false), matmul_inputs(s)));
}

TEST(CcTileMma, UnfusedTileIsBitwiseTheFallback) {
  // Multiply and add rounded separately, like the scalar nest compiled with -ffp-contract=off.
  const MatmulShape small{1, 23, 40, 17, 0, false, false};
  EXPECT_EQ(run_on(*cc(), matmul(small), matmul_inputs(small)),
            run_on(*interpreter(), matmul(small), matmul_inputs(small)));
  const MatmulShape s{1, 64, 96, 500, 0, false, false};
  EXPECT_EQ(run_on(*cc(), matmul(s), matmul_inputs(s)), run_on(*cc(), matmul(s, false), matmul_inputs(s)));
}

TEST(CcTileMma, EveryOperandLayoutPacksToTheSameBits) {
  // Row-major a and transposed b have runs along the steps (panels transposed 16 x 16 in
  // registers where AVX-512 is there), the other layouts along the lanes (whole panels copied a
  // source row at a time). 53 rows and 77 columns leave partial panels, 45 and 400 steps a
  // remainder after the 16-step blocks and a second k block; a zeroed d takes the zero-start
  // kernels. The oracle is the interpreter, or the untensorized nest compiled by cc when large.
  for (const bool a_t : {false, true}) {
    for (const bool b_t : {false, true}) {
      for (const std::int64_t k : {45, 400}) {
        const MatmulShape s{1, 53, 77, k, 0, b_t, k == 45, a_t, k == 400};
        if (s.zeroed) {
          ASSERT_NE(source_of(matmul(s)).find("starts at zero: the call sets its cells"), std::string::npos);
        }
        const auto want = k == 45 ? run_on(*interpreter(), matmul(s), matmul_inputs(s))
                                  : run_on(*cc(), matmul(s, false), matmul_inputs(s));
        EXPECT_EQ(run_on(*cc(), matmul(s), matmul_inputs(s)), want)
            << "a transposed " << a_t << ", b transposed " << b_t << ", k " << k;
      }
    }
  }
}

TEST(CcTileMma, OneRowPanelReadsWholeBPanelsInPlace) {
  // At most one row panel (10 rows; 20 for the narrow kernel) uses each B element once, so the
  // driver reads B's whole panels where B stands (its rows evenly spaced) and packs only the
  // partial last one (77 = 2 * 32 + 13 columns); 400 steps cross a k block, into a zeroed d. A
  // transposed B (columns not contiguous) is packed as before.
  const MatmulShape shapes[] = {
      {1, 10, 77, 45}, {1, 10, 77, 45, 0, false, false, true}, {1, 20, 16, 45}, {1, 10, 77, 45, 0, true},
      {1, 10, 77, 400, 0, false, true, false, true}};
  for (const MatmulShape& s : shapes) {
    if (s.zeroed) {
      ASSERT_NE(source_of(matmul(s)).find("starts at zero: the call sets its cells"), std::string::npos);
    }
    const auto want = s.k < 100 ? run_on(*interpreter(), matmul(s), matmul_inputs(s))
                                : run_on(*cc(), matmul(s, false), matmul_inputs(s));
    EXPECT_EQ(run_on(*cc(), matmul(s), matmul_inputs(s)), want)
        << s.batch << " x " << s.m << " x " << s.n << " x " << s.k << ", b transposed " << s.b_transposed
        << ", fused " << s.fused << ", a transposed " << s.a_transposed;
  }
}

TEST(CcTileMma, NarrowTilesUseTheOneVectorKernelAtEveryWidth) {
  // At most one vector of columns: the kernel library's driver takes the narrow (twice the rows,
  // one vector) micro-kernel; 7 columns leave most lanes padded, 50 rows an edge panel.
  ConfigGuard guard;
  for (const bool fused : {true, false}) {
    const MatmulShape s{2, 50, 7, 33, 0, false, fused};
    const auto want = run_on(*interpreter(), matmul(s), matmul_inputs(s));
    for (const char* bytes : {"16", "32", "64"}) {
      config::set_override("cc_vector_bytes", bytes);
      ASSERT_NE(source_of(matmul(s)).find("cannl_sgemm_x"), std::string::npos) << "the tile was not rendered";
      EXPECT_EQ(run_on(*cc(), matmul(s), matmul_inputs(s)), want) << bytes << "-byte vectors, fused " << fused;
    }
  }
}

TEST(CcTileMma, LastRowPanelsOfFourAndEightRowsUseTheirKernels) {
  // 28 = 2 * 12 + 4 and 32 = 2 * 12 + 8 rows: the last panel runs the 4- or 8-row kernel in place
  // (AVX-512's 12-row panels), computing the same bits as the scalar nest.
  ConfigGuard guard;
  config::set_override("cc_vector_bytes", "64");
  for (const std::int64_t m : {28, 32}) {
    for (const bool fused : {true, false}) {
      const MatmulShape s{1, m, 64, 45, 0, false, fused};
      EXPECT_EQ(run_on(*cc(), matmul(s), matmul_inputs(s)), run_on(*interpreter(), matmul(s), matmul_inputs(s)))
          << m << " rows, fused " << fused;
    }
  }
}

TEST(CcTileMma, ThreadCountDoesNotChangeTheResult) {
  ConfigGuard guard;
  const MatmulShape s{1, 200, 300, 500, 0, false, false};
  config::set_override("cc_threads", "1");
  const auto one = run_on(*cc(), matmul(s), matmul_inputs(s));
  config::set_override("cc_threads", "2");
  const auto two = run_on(*cc(), matmul(s), matmul_inputs(s));
  EXPECT_EQ(one, two);
}

TEST(CcTileMma, DeclinesWithoutSimd) {
  ConfigGuard guard;
  config::set_override("cc_vector_bytes", "0");
  const MatmulShape s{1, 37, 53, 29};
  const auto r = matmul(s);
  EXPECT_EQ(source_of(r).find("cannl_sgemm_x"), std::string::npos);
  EXPECT_EQ(run_on(*cc(), r, matmul_inputs(s)), run_on(*interpreter(), r, matmul_inputs(s)));
}

TEST(CcTileMma, EveryVectorWidthComputesTheSameFusedResult) {
  ConfigGuard guard;
  const MatmulShape s{2, 19, 45, 33};
  const auto want = run_on(*interpreter(), matmul(s), matmul_inputs(s));
  for (const char* bytes : {"16", "32", "64"}) {
    config::set_override("cc_vector_bytes", bytes);
    EXPECT_EQ(run_on(*cc(), matmul(s), matmul_inputs(s)), want) << bytes << "-byte vectors";
  }
}

// ---- Grid loops ----

// s[i] = sum_j m[i, j] with the row loop typed `row_axis`, the column loop `col_axis`.
backends::CompileRequest row_sum(std::int64_t rows, std::int64_t cols, AxisType row_axis,
                                 AxisType col_axis, const std::string& name) {
  auto m = make_node("m", DType::F32, {rows, cols});
  auto s = make_node("s", DType::F32, {rows});
  const Symbol i = fresh_symbol(), j = fresh_symbol();
  const std::vector<AxisIndex> si{AxisIndex::iterator(i)};
  const std::vector<AxisIndex> mij{AxisIndex::iterator(i), AxisIndex::iterator(j)};
  auto acc = apply(Op::Add, DType::F32, {get(s, si), get(m, mij)});
  auto body = for_loop(i, 0, rows, for_loop(j, 0, cols, set(s, si, acc), col_axis), row_axis);
  return {LoweredRoutine{name, body, {}}, {m, s}};
}

TEST(CcGrid, ChunksOnOpenMpAreBitwiseSerial) {
  ConfigGuard guard;
  config::set_override("cc_vector_bytes", "0");
  const auto r = row_sum(301, 57, AxisType::Grid, AxisType::Serial, "grid_rows");
  const std::string src = source_of(r);
  ASSERT_NE(src.find("#pragma omp parallel for"), std::string::npos) << src;
  const std::vector<Bytes> in{bytes_of(random_floats(301 * 57, 4)), bytes_of(random_floats(301, 5))};
  const auto want = run_on(*interpreter(), r, in);
  for (const char* threads : {"1", "2", "3"}) {
    for (const char* chunks : {"0", "1", "7", "1000"}) {
      config::set_override("cc_threads", threads);
      config::set_override("cc_parallel_chunks", chunks);
      EXPECT_EQ(run_on(*cc(), r, in), want) << threads << " threads, " << chunks << " chunks";
    }
  }
}

TEST(CcGrid, RacyGridLoopIsAnInternalError) {
  // The reduction loop typed Grid: every iteration writes the same s[i]. The final lowering
  // round refuses it (a schedule bug), rather than printing it serially and hiding the bug.
  const auto r = row_sum(5, 400, AxisType::Serial, AxisType::Grid, "grid_racy");
  try {
    cc()->compile(r);
    FAIL() << "expected InternalError";
  } catch (const InternalError& e) {
    EXPECT_NE(std::string(e.what()).find("validate_parallel"), std::string::npos) << e.what();
  }
}

TEST(CcGrid, NoneRendersSerialLoops) {
  ConfigGuard guard;
  config::set_override("cc_parallel_grid", "none");
  const auto r = row_sum(64, 8, AxisType::Grid, AxisType::Serial, "grid_none");
  EXPECT_EQ(source_of(r).find("#pragma omp"), std::string::npos);
}

TEST(CcGrid, BadSettingsAreConfigErrors) {
  ConfigGuard guard;
  const auto r = row_sum(64, 8, AxisType::Grid, AxisType::Serial, "grid_bad");
  config::set_override("cc_parallel_grid", "dispatch");
  try {
    cc()->compile(r);
    FAIL() << "expected ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("config key 'cc_parallel_grid' = 'dispatch' (from override): expected auto, openmp or none"), std::string::npos) << e.what();
  }
  config::set_override("cc_parallel_grid", "auto");
  config::set_override("cc_vector_bytes", "48");
  try {
    cc()->compile(r);
    FAIL() << "expected ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("cc_vector_bytes must be -1 (auto), 0, 16, 32 or 64"), std::string::npos);
  }
}

// ---- Vectorized loops ----

TEST(CcVectorized, ElementwiseIsBitwiseSerial) {
  ConfigGuard guard;
  const std::int64_t n = 1000 + 5;  // a remainder for every width
  auto x = make_node("x", DType::F32, {n});
  auto y = make_node("y", DType::F32, {n});
  auto bias = make_node("bias", DType::F32, {1});
  auto out = make_node("out", DType::F32, {n});
  auto gate = make_node("gate", DType::F32, {n});
  const Symbol i = fresh_symbol();
  const std::vector<AxisIndex> at{AxisIndex::iterator(i)};
  auto gx = get(x, at), gy = get(y, at), gb = get(bias, {AxisIndex::fixed(0)});
  auto pre = apply(Op::Fma, DType::F32, {gx, gy, gb});
  auto v1 = apply(Op::Relu, DType::F32, {apply(Op::Div, DType::F32, {apply(Op::Sub, DType::F32, {pre, constant(0.25, DType::F32)}), gy})});
  auto v2 = apply(Op::ReluGate, DType::F32, {gx, apply(Op::Neg, DType::F32, {gy})});
  auto picked = make_node("picked", DType::F32, {n});  // where(x, y, -1e9): a masked score
  auto v3 = apply(Op::Where, DType::F32, {gx, gy, constant(-1e9, DType::F32)});
  auto body = for_loop(i, 0, n, seq({set(out, at, v1), set(gate, at, v2), set(picked, at, v3)}), AxisType::Vectorized);
  const backends::CompileRequest r{LoweredRoutine{"vec_elementwise", body, {}}, {x, y, bias, out, gate, picked}};
  auto xs = random_floats(n, 7);
  xs[3] = -0.0f;
  xs[4] = NAN;
  for (std::int64_t k = 5; k < n; k += 3) xs[static_cast<std::size_t>(k)] = 0.0f;
  const std::vector<Bytes> in{bytes_of(xs), bytes_of(random_floats(n, 8)), bytes_of(std::vector<float>{0.5f})};
  const auto want = run_on(*interpreter(), r, in);
  for (const char* bytes : {"16", "32", "64"}) {
    config::set_override("cc_vector_bytes", bytes);
    const std::string src = source_of(r);
    EXPECT_NE(src.find("vectorized, "), std::string::npos) << src;
    EXPECT_EQ(run_on(*cc(), r, in), want) << bytes << "-byte vectors";
  }
}

TEST(CcVectorized, AccumulationUsesIndependentChains) {
  const auto r = row_sum(3, 1001, AxisType::Serial, AxisType::Vectorized, "vec_rowsum");
  const std::string src = source_of(r);
  EXPECT_NE(src.find("vectorized accumulation, 4 chains"), std::string::npos) << src;
  const std::vector<Bytes> in{bytes_of(random_floats(3 * 1001, 9)), bytes_of(std::vector<float>{1, 2, 3})};
  const auto got = values_of<float>(run_on(*cc(), r, in)[1]);
  const auto want = values_of<float>(run_on(*interpreter(), r, in)[1]);
  for (std::size_t x = 0; x < 3; ++x) EXPECT_NEAR(got[x], want[x], 1e-4f);
}

// x[i] = a[i]; x[i + 1] = b[i]: serially every x[i] but the last ends as a[i] (the later
// iteration's write wins); vector stores statement by statement would leave b[i - 1] there.
TEST(CcVectorized, NodeWrittenAtTwoCellsKeepsTheSerialLastWrite) {
  ConfigGuard guard;
  const std::int64_t n = 37;
  auto a = make_node("a", DType::F32, {n});
  auto b = make_node("b", DType::F32, {n});
  auto x = make_node("x", DType::F32, {n + 1});
  const Symbol i = fresh_symbol();
  const std::vector<AxisIndex> at{AxisIndex::iterator(i)};
  std::vector<AxisIndex> next = at;
  next[0].offset = 1;
  auto body = for_loop(i, 0, n, seq({set(x, at, get(a, at)), set(x, next, get(b, at))}), AxisType::Vectorized);
  const backends::CompileRequest r{LoweredRoutine{"vec_two_cells", body, {}}, {a, b, x}};
  const std::vector<Bytes> in{bytes_of(random_floats(n, 12)), bytes_of(random_floats(n, 13))};
  const auto want = run_on(*interpreter(), r, in);
  for (const char* bytes : {"16", "32", "64"}) {
    config::set_override("cc_vector_bytes", bytes);
    EXPECT_EQ(run_on(*cc(), r, in), want) << bytes << "-byte vectors";
  }
}

TEST(CcVectorized, StridedAccessDeclinesToTheSerialLoop) {
  auto m = make_node("m", DType::F32, {40, 40});
  auto t = make_node("t", DType::F32, {40, 40});
  const Symbol i = fresh_symbol(), j = fresh_symbol();
  const std::vector<AxisIndex> ij{AxisIndex::iterator(i), AxisIndex::iterator(j)};
  const std::vector<AxisIndex> ji{AxisIndex::iterator(j), AxisIndex::iterator(i)};
  auto body = for_loop(i, 0, 40, for_loop(j, 0, 40, set(t, ij, get(m, ji)), AxisType::Vectorized));
  const backends::CompileRequest r{LoweredRoutine{"vec_transpose", body, {}}, {m, t}};
  EXPECT_EQ(source_of(r).find("vectorized"), std::string::npos);
  const std::vector<Bytes> in{bytes_of(random_floats(1600, 10))};
  EXPECT_EQ(run_on(*cc(), r, in), run_on(*interpreter(), r, in));
}

}  // namespace
}  // namespace cannl
