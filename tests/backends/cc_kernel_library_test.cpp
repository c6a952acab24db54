// The f32 matmul kernel library (src/codegen/c/kernels/cannl_sgemm.c) alone, compiled by the cc
// backend at every vector width, for the target's own instructions and for the bare baseline
// (where GCC vector extensions emulate the wide vectors and fmaf the fused update): every result
// bitwise equal to a C++ reference nest that takes each cell's steps in increasing order, with
// std::fma (fused) or a rounded multiply then a rounded add (this file is compiled with
// -ffp-contract=off), over every operand layout the printer passes and the edge sizes of the
// blocking (remainders of the register tile, the 4- and 8-row panels, the narrow tile, k > KC,
// n > NC, m > MC), with one thread and two.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "backends/cc/kernel_library.h"
#include "backends/cc/toolchain.h"
#include "backends/run_util.h"
#include "cannl/support/config.h"
#include "cannl/support/error.h"
#include "support/sanitizers.h"

namespace cannl {
namespace {

using Sgemm = int (*)(std::int64_t, std::int64_t, std::int64_t, float*, std::int64_t, std::int64_t, const float*,
                      std::int64_t, std::int64_t, const float*, std::int64_t, std::int64_t, int, int, int);
using SgemmNd = int (*)(int, const std::int64_t*, const std::int64_t*, const std::int64_t*, int,
                        const std::int64_t*, const std::int64_t*, const std::int64_t*, int, const std::int64_t*,
                        const std::int64_t*, const std::int64_t*, float*, const float*, const float*, int, int,
                        int);

// One folded loop group: extents (outermost first) and element strides in two operands.
struct Group {
  std::vector<std::int64_t> extent, u, v;
};

// The offsets of a group's cells in row-major order over its loops (as the driver documents).
void offsets(const Group& g, std::vector<std::int64_t>& u, std::vector<std::int64_t>& v) {
  u = {0};
  v = {0};
  for (std::size_t x = 0; x < g.extent.size(); ++x) {
    std::vector<std::int64_t> nu, nv;
    for (std::size_t c = 0; c < u.size(); ++c) {
      for (std::int64_t at = 0; at < g.extent[x]; ++at) {
        nu.push_back(u[c] + at * g.u[x]);
        nv.push_back(v[c] + at * g.v[x]);
      }
    }
    u = std::move(nu);
    v = std::move(nv);
  }
}

// d[dr[i] + dc[j]] += a[ar[i] + ak[p]] * b[bk[p] + bc[j]], p increasing, one rounding per fma or
// two per multiply-add.
void reference(const Group& rows, const Group& cols, const Group& steps, float* d, const float* a, const float* b,
               bool fused) {
  std::vector<std::int64_t> dr, ar, dc, bc, ak, bk;
  offsets(rows, dr, ar);
  offsets(cols, dc, bc);
  offsets(steps, ak, bk);
  for (std::size_t i = 0; i < dr.size(); ++i) {
    for (std::size_t j = 0; j < dc.size(); ++j) {
      float acc = d[dr[i] + dc[j]];
      for (std::size_t p = 0; p < ak.size(); ++p) {
        const float x = a[ar[i] + ak[p]], y = b[bk[p] + bc[j]];
        acc = fused ? std::fma(x, y, acc) : acc + x * y;
      }
      d[dr[i] + dc[j]] = acc;
    }
  }
}

// Values of assorted magnitudes, so that a different order of the updates changes the bits.
std::vector<float> random_floats(std::size_t n, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> value(-1.0f, 1.0f);
  std::uniform_int_distribution<int> scale(-3, 3);
  std::vector<float> out(n);
  for (auto& x : out) x = std::ldexp(value(gen), scale(gen));
  return out;
}

// The element count an operand addressed by two groups' offsets needs.
std::size_t span(const std::vector<std::int64_t>& x, const std::vector<std::int64_t>& y) {
  std::int64_t top = 0;
  for (auto u : x)
    for (auto v : y) top = std::max(top, u + v);
  return static_cast<std::size_t>(top + 1);
}

std::size_t span_of(const Group& g, bool first, const Group& h, bool h_first) {
  std::vector<std::int64_t> gu, gv, hu, hv;
  offsets(g, gu, gv);
  offsets(h, hu, hv);
  return span(first ? gu : gv, h_first ? hu : hv);
}

struct Kernels {
  Sgemm plain = nullptr;
  SgemmNd nd = nullptr;
  std::shared_ptr<backends::cc::SharedLibrary> library;
};

class KernelLibrary : public ::testing::TestWithParam<std::tuple<int, const char*>> {
 protected:
  void SetUp() override {
    try {
      backends::cc::find_toolchain();
    } catch (const BackendUnavailable& e) {
      GTEST_SKIP() << e.what();
    }
    const auto [bytes, arch] = GetParam();
    config::set_override("cc_arch_flags", arch);
    config::set_override("cc_fp_contract", "off");
    k_.library = backends::cc::sgemm_kernel_library(bytes);
    const std::string name = "cannl_sgemm_x" + std::to_string(bytes / 4);
    k_.plain = reinterpret_cast<Sgemm>(k_.library->symbol(name));
    k_.nd = reinterpret_cast<SgemmNd>(k_.library->symbol(name + "_nd"));
  }
  void TearDown() override { config::clear_overrides(); }

  // Runs the folded driver and the reference on the same random operands; expects equal bits.
  void check(const Group& rows, const Group& cols, const Group& steps, const std::string& what) {
    const std::size_t dn = span_of(rows, true, cols, true);
    const std::size_t an = span_of(rows, false, steps, true);
    const std::size_t bn = span_of(steps, false, cols, false);
    const std::vector<float> a = random_floats(an, 1), b = random_floats(bn, 2);
    for (const bool fused : {false, true}) {
      for (const bool zero : {false, true}) {
        for (const int threads : {1, 2}) {
          std::vector<float> want = zero ? std::vector<float>(dn, 0.0f) : random_floats(dn, 3);
          std::vector<float> got = want;
          reference(rows, cols, steps, want.data(), a.data(), b.data(), fused);
          const int rc = k_.nd(static_cast<int>(rows.extent.size()), rows.extent.data(), rows.u.data(),
                               rows.v.data(), static_cast<int>(cols.extent.size()), cols.extent.data(),
                               cols.u.data(), cols.v.data(), static_cast<int>(steps.extent.size()),
                               steps.extent.data(), steps.u.data(), steps.v.data(), got.data(), a.data(),
                               b.data(), fused, zero, threads);
          ASSERT_EQ(rc, 0) << what;
          ASSERT_EQ(std::memcmp(got.data(), want.data(), dn * sizeof(float)), 0)
              << what << ", fused " << fused << ", zero " << zero << ", threads " << threads;
        }
      }
    }
  }

  // A plain m x n x k matmul in one of the layouts the printer passes: 0 row-major, 1 A and B
  // transposed, 2 rows padded (leading dimensions above the widths), 3 C and A column-major
  // with B's columns three apart (no operand contiguous along C's rows).
  void check_matmul(std::int64_t m, std::int64_t n, std::int64_t k, int layout) {
    struct Strides {
      std::int64_t drs, dcs, ars, acs, brs, bcs;
    };
    const Strides s = layout == 0   ? Strides{n, 1, k, 1, n, 1}
                      : layout == 1 ? Strides{n, 1, 1, m, 1, k}
                      : layout == 2 ? Strides{n + 3, 1, k + 5, 1, n + 7, 1}
                                    : Strides{1, m, 1, m, 3 * n, 3};
    check({{m}, {s.drs}, {s.ars}}, {{n}, {s.dcs}, {s.bcs}}, {{k}, {s.acs}, {s.brs}},
          std::to_string(m) + " x " + std::to_string(n) + " x " + std::to_string(k) + ", layout " +
              std::to_string(layout));
  }

  Kernels k_;
};

TEST_P(KernelLibrary, MatmulsOfEveryLayoutAndEdgeMatchTheReferenceBitwise) {
  const std::int64_t lanes = std::get<0>(GetParam()) / 4;
  const std::vector<std::array<std::int64_t, 3>> shapes = {
      {1, 1, 1},
      {13, 33, 17},    // no dimension a multiple of any tile
      {28, 64, 30},    // 12-row panels leave 4 rows (6-row panels: 4 too)
      {32, 64, 31},    // 12-row panels leave 8 rows
      {50, 7, 33},     // narrow: fewer columns than a vector
      {37, lanes, 20}, // narrow: exactly one vector
      {10, 100, 50},   // one row panel: B read in place (row-major)
      {20, 40, 400},   // k above every KC
      {9, 520, 5},     // n above NC
      {3100, 6, 3},    // m above MC, narrow
      {3080, 40, 2},   // m above MC, wide
      {200, 96, 70},   // big enough for the team of two, split by rows
      {10, 1000, 40},  // few rows: the team splits the columns
  };
  for (const auto& [m, n, k] : shapes)
    for (int layout = 0; layout < 4; ++layout) check_matmul(m, n, k, layout);
}

TEST_P(KernelLibrary, PlainFormIsTheFoldedFormOfOneLoopEach) {
  const std::int64_t m = 29, n = 45, k = 19;
  const std::vector<float> a = random_floats(m * k, 4), b = random_floats(k * n, 5);
  std::vector<float> got = random_floats(m * n, 6);
  std::vector<float> want = got;
  reference({{m}, {n}, {k}}, {{n}, {1}, {1}}, {{k}, {1}, {n}}, want.data(), a.data(), b.data(), true);
  ASSERT_EQ(k_.plain(m, n, k, got.data(), n, 1, a.data(), k, 1, b.data(), n, 1, 1, 0, 1), 0);
  EXPECT_EQ(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)), 0);
}

TEST_P(KernelLibrary, ConvolutionsWithFoldedOffsetsMatchTheReferenceBitwise) {
  // An NHWC image (batch, h, w, cin) against a (kh, kw, cin, cout) kernel, output (batch, oh, ow,
  // cout): rows are (batch, oh, ow), columns cout, steps (kh, kw, cin), an implicit im2col.
  struct Conv {
    std::int64_t batch, h, w, cin, kh, kw, cout, stride;
  };
  for (const Conv& c : {Conv{2, 12, 12, 3, 5, 5, 16, 1}, Conv{2, 10, 9, 4, 3, 3, 6, 1},
                        Conv{1, 20, 20, 8, 3, 3, 40, 1}, Conv{2, 11, 11, 5, 3, 3, 24, 2}}) {
    const std::int64_t oh = (c.h - c.kh) / c.stride + 1, ow = (c.w - c.kw) / c.stride + 1;
    const Group rows{{c.batch, oh, ow}, {oh * ow * c.cout, ow * c.cout, c.cout},
                     {c.h * c.w * c.cin, c.stride * c.w * c.cin, c.stride * c.cin}};
    const Group cols{{c.cout}, {1}, {1}};
    const Group steps{{c.kh, c.kw, c.cin}, {c.w * c.cin, c.cin, 1}, {c.kw * c.cin * c.cout, c.cin * c.cout, c.cout}};
    check(rows, cols, steps, "convolution to " + std::to_string(c.cout) + " channels, stride " +
                                 std::to_string(c.stride));
  }
}

TEST_P(KernelLibrary, ConvolutionWeightGradientsMatchTheReferenceBitwise) {
  // dw[cout, kh, kw, cin] += g[b, oh, ow, cout] * x[b, oh + kh, ow + kw, cin] over (b, oh, ow):
  // the columns (kh, kw, cin) run on in x for kw * cin lanes, then jump a row (packed by runs);
  // then the same with the roles swapped (rows (kh, kw, cin) and the output channels as columns).
  struct Conv {
    std::int64_t batch, h, w, cin, kh, kw, cout;
  };
  for (const Conv& c : {Conv{2, 12, 12, 3, 5, 5, 16}, Conv{3, 9, 10, 2, 3, 3, 7}, Conv{1, 14, 14, 8, 3, 3, 20}}) {
    const std::int64_t oh = c.h - c.kh + 1, ow = c.w - c.kw + 1;
    const Group out{{c.cout}, {c.kh * c.kw * c.cin}, {1}};
    const Group taps{{c.kh, c.kw, c.cin}, {c.kw * c.cin, c.cin, 1}, {c.w * c.cin, c.cin, 1}};
    const Group steps{{c.batch, oh, ow}, {oh * ow * c.cout, ow * c.cout, c.cout}, {c.h * c.w * c.cin, c.w * c.cin, c.cin}};
    check(out, taps, steps, "weight gradient of " + std::to_string(c.cin) + " input channels");
    const Group taps_rows{{c.kh, c.kw, c.cin}, {c.kw * c.cin, c.cin, 1}, {c.w * c.cin, c.cin, 1}};
    const Group out_cols{{c.cout}, {c.kh * c.kw * c.cin}, {1}};
    const Group steps_swapped{{c.batch, oh, ow}, {c.h * c.w * c.cin, c.w * c.cin, c.cin}, {oh * ow * c.cout, ow * c.cout, c.cout}};
    check(taps_rows, out_cols, steps_swapped, "weight gradient with taps as rows, " + std::to_string(c.cin) + " input channels");
  }
}

TEST_P(KernelLibrary, UnallocatableOffsetTablesAreAnErrorCodeNotAnAbort) {
#if defined(CANNL_TEST_UNDER_ASAN)
  GTEST_SKIP() << "AddressSanitizer aborts on the impossible allocation itself";
#else
  // 2^44 rows need 2^48 bytes of offsets: more than a process can address, so malloc fails
  // before anything is read or written.
  const std::int64_t rows = std::int64_t{1} << 44, one = 1, zero = 0;
  float d = 0.0f, a = 0.0f, b = 0.0f;
  EXPECT_NE(k_.nd(1, &rows, &zero, &zero, 1, &one, &zero, &zero, 1, &one, &zero, &zero, &d, &a, &b, 1, 0, 1), 0);
#endif
}

// A routine that only declares the kernel and calls it, as generated routines do.
const char* const kCaller = R"(#include <stdint.h>
int cannl_sgemm_x16(int64_t m, int64_t n, int64_t k, float *d, int64_t drs, int64_t dcs, const float *a,
    int64_t ars, int64_t acs, const float *b, int64_t brs, int64_t bcs, int fused, int zero, int threads);
int caller(float *d, const float *a, const float *b) {
  return cannl_sgemm_x16(2, 2, 2, d, 2, 1, a, 2, 1, b, 2, 1, 1, 0, 1);
}
)";

TEST(KernelLinking, EachFlagSettingLinksItsOwnLibraryAndChangesTheRoutineDigest) {
  try {
    backends::cc::find_toolchain();
  } catch (const BackendUnavailable& e) {
    GTEST_SKIP() << e.what();
  }
  test_util::ConfigGuard guard;
  std::vector<std::string> kernel_paths, routine_paths;
  std::vector<void*> kernel_symbols;
  for (const char* level : {"3", "2"}) {
    config::set_override("cc_optimization_level", level);
    const auto link = backends::cc::kernel_link_options(kCaller, 64);
    ASSERT_EQ(link.libraries.size(), 1u);
    const auto kernels = backends::cc::sgemm_kernel_library(64);
    const auto routine = backends::cc::load_or_compile("kernel_caller", kCaller, link);
    // The routine's reference resolves inside its own kernel library (dlsym searches a handle's
    // dependencies), not in one loaded for other flags.
    EXPECT_EQ(routine->symbol("cannl_sgemm_x16"), kernels->symbol("cannl_sgemm_x16")) << "-O" << level;
    using Caller = int (*)(float*, const float*, const float*);
    float d[4] = {1, 2, 3, 4};
    const float a[4] = {1, 2, 3, 4}, b[4] = {5, 6, 7, 8};
    ASSERT_EQ(reinterpret_cast<Caller>(routine->symbol("caller"))(d, a, b), 0);
    EXPECT_EQ(d[0], 1 + 1 * 5 + 2 * 7);
    EXPECT_EQ(d[3], 4 + 3 * 6 + 4 * 8);
    kernel_paths.push_back(kernels->path());
    routine_paths.push_back(routine->path());
    kernel_symbols.push_back(kernels->symbol("cannl_sgemm_x16"));
  }
  EXPECT_NE(kernel_paths[0], kernel_paths[1]);
  EXPECT_NE(kernel_symbols[0], kernel_symbols[1]);
  // With the same flags, the same routine text linked against another kernel library is another
  // cache entry.
  config::set_override("cc_optimization_level", "3");
  const auto relinked = backends::cc::load_or_compile("kernel_caller", kCaller, {.libraries = {kernel_paths[1]}});
  EXPECT_NE(relinked->path(), routine_paths[0]);
  // Unlinked, the kernel's symbols are not found: no library exports them to the process.
  EXPECT_THROW(backends::cc::load_or_compile("kernel_caller", kCaller), CompileError);
  EXPECT_TRUE(backends::cc::kernel_link_options("int main(void) { return 0; }", 64).libraries.empty());
  EXPECT_TRUE(backends::cc::kernel_link_options(kCaller, 0).libraries.empty());
}

INSTANTIATE_TEST_SUITE_P(Widths, KernelLibrary,
                         ::testing::Combine(::testing::Values(16, 32, 64), ::testing::Values("auto", "none")),
                         [](const auto& info) {
                           return std::to_string(std::get<0>(info.param)) + "_bytes_arch_" +
                                  std::get<1>(info.param);
                         });

}  // namespace
}  // namespace cannl
