// Op parity: every op of ops.def x every dtype it is defined for, computed by the C backend and by
// the reference interpreter from the same input bytes. A new op row is tested without touching
// this file: the case list is generated from the op table. The ops of one result dtype are one
// test and one routine (EveryDtype/OpParityTest.CompiledMatchesInterpreter/f32): a device compile
// costs far more than the few kernels of an op. Compiled into test_gpu as well (CANNL_TEST_GPU),
// where the compiled side is the GPU backend of tests/gpu/gpu_test_util.h.
#include <gtest/gtest.h>

#include <iomanip>
#include <optional>
#include <ostream>
#include <sstream>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "cannl/runtime/context.h"
#include "cannl/support/error.h"
#include "runtime/test_util.h"
#include "runtime/value_codec.h"
#ifdef CANNL_TEST_GPU
#include "backends/run_util.h"
#include "cannl/support/config.h"
#include "gpu/gpu_test_util.h"
#endif

namespace cannl::testing {
namespace {

using ir::DType;
using ir::Op;

constexpr std::int64_t kCells = 64;

struct OpCase {
  Op op;
  DType dtype;  // of the result (and of the arguments, except u4x32-only arguments)
};

bool is_threefry(Op op) { return op == Op::ThreefryCrypto || op == Op::ThreefryLight; }

/// Every (op, dtype) the op table defines: float spellings on float dtypes, integer spellings on
/// integer dtypes, threefry on u4x32, uniform1 from u4x32 into every other dtype.
std::vector<OpCase> all_cases() {
  std::vector<OpCase> cases;
  for (int k = 0; k < ir::kOpCount; ++k) {
    const Op op = static_cast<Op>(k);
    for (DType dtype : ir::kAllDTypes) {
      bool defined = false;
      if (op == Op::Uniform1) defined = dtype != DType::U4x32;
      else if (is_threefry(op)) defined = dtype == DType::U4x32;
      else if (ir::is_float(dtype)) defined = !ir::op_c_float_spelling(op).empty();
      else if (dtype != DType::U4x32) defined = !ir::op_c_int_spelling(op).empty();
      if (defined) cases.push_back({op, dtype});
    }
  }
  return cases;
}

/// splitmix64: a deterministic stream of test inputs.
std::uint64_t next_random(std::uint64_t& state) {
  std::uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

/// Negatives, zeros (both signs), fractions, large values, overflow-to-infinity in narrow types,
/// then pseudo-random values in [-20, 20).
std::vector<double> float_inputs(int arg) {
  std::vector<double> v = {0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.0, -2.0, 3.0, -3.0, 0.25, -0.75,
                           1.5, -2.5, 10.0, -10.0, 100.0, -100.0, 1000.5, -1e4, 65504.0, 1e5,
                           -1e5, 1e-3, -1e-3, 1e-6, 3.14159, -2.71828, 0.1, -0.1, 0.3333, 7.0,
                           -7.0, 42.0, 1e30, -1e30, 1e300, 88.5, -88.5, 0.7};
  std::uint64_t state = 1234 + static_cast<std::uint64_t>(arg);
  while (static_cast<std::int64_t>(v.size()) < kCells)
    v.push_back(static_cast<double>(next_random(state) % 40000) / 1000.0 - 20.0);
  // Rotate per argument so binary and ternary ops see many different pairs.
  std::rotate(v.begin(), v.begin() + (arg * 17) % kCells, v.end());
  return v;
}

/// Extremes of every integer width, small values of both signs, then pseudo-random bits; each
/// is wrapped into the target type as a C cast would.
std::vector<std::int64_t> int_inputs(int arg) {
  constexpr auto i64max = std::numeric_limits<std::int64_t>::max();
  constexpr auto i64min = std::numeric_limits<std::int64_t>::min();
  std::vector<std::int64_t> v = {0, 1, -1, 2, -2, 3, -3, 7, -7, 10, -10, 100, -100, 127, 128,
                                 255, 256, -128, 1000, -1000, 65535, 65536, 2147483647,
                                 -2147483647 - 1, 4294967295, i64max, i64min, 0, 1, 5, -5, 12};
  std::uint64_t state = 99 + static_cast<std::uint64_t>(arg);
  while (static_cast<std::int64_t>(v.size()) < kCells) {
    const std::uint64_t r = next_random(state);
    v.push_back(r % 3 == 0 ? static_cast<std::int64_t>(r) : static_cast<std::int64_t>(r % 201) - 100);
  }
  std::rotate(v.begin(), v.begin() + (arg * 11) % kCells, v.end());
  return v;
}

template <typename T>
void append_as(std::vector<std::byte>& out, T value) {
  const auto at = out.size();
  out.resize(at + sizeof(T));
  std::memcpy(out.data() + at, &value, sizeof(T));
}

std::vector<std::byte> input_bytes(DType dtype, int arg) {
  std::vector<std::byte> bytes;
  if (dtype == DType::U4x32) {
    std::uint64_t state = 7 + static_cast<std::uint64_t>(arg);
    for (std::int64_t k = 0; k < 4 * kCells; ++k)
      append_as(bytes, static_cast<std::uint32_t>(next_random(state)));
  } else if (ir::is_float(dtype)) {
    bytes.resize(static_cast<std::size_t>(kCells) * ir::dtype_bytes(dtype));
    const auto values = float_inputs(arg);
    for (std::size_t k = 0; k < values.size(); ++k)
      runtime::store_value(dtype, values[k], bytes.data() + k * ir::dtype_bytes(dtype));
  } else {
    for (std::int64_t value : int_inputs(arg)) {
      switch (dtype) {
        case DType::I32: append_as(bytes, static_cast<std::int32_t>(value)); break;
        case DType::I64: append_as(bytes, value); break;
        case DType::U32: append_as(bytes, static_cast<std::uint32_t>(value)); break;
        case DType::U64: append_as(bytes, static_cast<std::uint64_t>(value)); break;
        default: append_as(bytes, static_cast<std::uint8_t>(value)); break;
      }
    }
  }
  return bytes;
}

/// Distance in units in the last place between two floats of `width` bits (sign-magnitude).
std::uint64_t ulp_distance(std::uint64_t a, std::uint64_t b, int width) {
  const std::uint64_t sign = std::uint64_t{1} << (width - 1);
  const std::uint64_t ma = a & (sign - 1), mb = b & (sign - 1);
  if ((a & sign) == (b & sign)) return ma > mb ? ma - mb : mb - ma;
  return (ma > 2 || mb > 2) ? std::numeric_limits<std::uint64_t>::max() : ma + mb;
}

std::uint64_t cell_bits(const std::byte* cell, std::size_t size) {
  std::uint64_t bits = 0;
  std::memcpy(&bits, cell, size);  // little-endian hosts: the low bytes
  return bits;
}

/// Why cell `k` of the two results differ beyond tolerance, or "" when they agree.
std::string compare_cell(const OpCase& c, const std::byte* cc, const std::byte* interp) {
  const std::size_t size = ir::dtype_bytes(c.dtype);
  if (std::memcmp(cc, interp, size) == 0) return "";
  if (!ir::is_float(c.dtype)) return "bits differ";
  const double x = runtime::load_value(c.dtype, cc), y = runtime::load_value(c.dtype, interp);
  if (std::isnan(x) && std::isnan(y)) return "";
  const auto ulps = ulp_distance(cell_bits(cc, size), cell_bits(interp, size),
                                 static_cast<int>(size * 8));
  if (ir::op_is_transcendental(c.op) && ulps <= 2) return "";
  std::ostringstream text;
  text << std::setprecision(17) << "cc " << x << " (bits 0x" << std::hex << cell_bits(cc, size)
       << ") vs interpreter " << std::dec << y << " (bits 0x" << std::hex
       << cell_bits(interp, size) << std::dec << "), " << ulps << " ulp apart";
  return text.str();
}

/// One op case of a batch: out := op(args...) pointwise over kCells cells.
struct BatchCase {
  OpCase c;
  std::vector<ir::NodeRef> args;
  ir::NodeRef out;
  std::string what() const { return std::string(ir::op_name(c.op)) + " on " + std::string(ir::dtype_name(c.dtype)); }
};

/// `cases` as one computation: one assignment each, over nodes of their own (tagged by position),
/// appended to `out`.
ir::Comp batch_comp(const std::vector<OpCase>& cases, std::vector<BatchCase>& out) {
  ir::Comp comp;
  for (const OpCase& c : cases) {
    const DType arg_dtype = c.op == Op::Uniform1 || is_threefry(c.op) ? DType::U4x32 : c.dtype;
    const std::string tag = std::to_string(out.size());
    BatchCase b{c, {}, ir::make_node("out" + tag, c.dtype, {kCells})};
    std::vector<ir::Operand> operands;
    for (int a = 0; a < ir::op_arity(c.op); ++a) {
      b.args.push_back(ir::make_node("arg" + tag + "_" + std::to_string(a), arg_dtype, {kCells}));
      operands.push_back(of(b.args.back()));
    }
    comp.body.push_back(
        ir::make_accum(accum_op(b.out, Op::Arg2, c.op, operands, pointwise_projections({kCells}, ir::op_arity(c.op)))));
    out.push_back(std::move(b));
  }
  return comp;
}

/// `comp` compiled as routine `name` and run in `ctx` from the shared input bytes (argument a of
/// every case gets input_bytes(..., a)); the storage bytes of each case's output. `source` gets
/// the generated code.
std::vector<std::vector<std::byte>> run_batch(runtime::Context ctx, const ir::Comp& comp,
                                              const std::vector<BatchCase>& cases, const std::string& name,
                                              std::string* source = nullptr) {
  auto routine = ctx.compile(comp, name);
  if (source) *source = routine.source();
  for (const BatchCase& b : cases)
    for (std::size_t a = 0; a < b.args.size(); ++a)
      ctx.set_bytes(b.args[a], input_bytes(b.args[a]->dtype, static_cast<int>(a)));
  ctx.run(routine);
  std::vector<std::vector<std::byte>> outs;
  for (const BatchCase& b : cases) outs.push_back(ctx.get_bytes(b.out));
  return outs;
}

/// Adds a failure for the first few cells where `compiled` and `interp` differ beyond the op's
/// tolerance (`through` says how the compiled side ran, for the message).
void expect_cells_agree(const BatchCase& b, const std::vector<std::byte>& compiled, const std::vector<std::byte>& interp,
                        const std::string& through) {
  ASSERT_EQ(compiled.size(), interp.size()) << b.what();
  const std::size_t size = ir::dtype_bytes(b.c.dtype);
  int mismatches = 0;  // report the first few cells only
  for (std::int64_t k = 0; k < kCells && mismatches < 5; ++k) {
    const auto at = static_cast<std::size_t>(k) * size;
    const std::string why = compare_cell(b.c, compiled.data() + at, interp.data() + at);
    if (why.empty()) continue;
    ++mismatches;
    ADD_FAILURE() << b.what() << through << ", cell " << k << ": " << why;
  }
}

/// The result dtypes of all_cases(), in their order.
std::vector<DType> result_dtypes() {
  std::vector<DType> dtypes;
  for (const OpCase& c : all_cases())
    if (std::find(dtypes.begin(), dtypes.end(), c.dtype) == dtypes.end()) dtypes.push_back(c.dtype);
  return dtypes;
}

std::string dtype_case_name(const ::testing::TestParamInfo<DType>& info) {
  return std::string(ir::dtype_name(info.param));
}

/// Every op case of one result dtype.
class OpParityTest : public ::testing::TestWithParam<DType> {};

/// The compiled side of the comparison: the C backend, or in test_gpu the GPU backend (nullopt
/// with `why` set when it does not open).
std::optional<runtime::Context> compiled_context(std::string& why) {
#ifdef CANNL_TEST_GPU
  if (!gpu_test::backend()) {
    why = gpu_test::unavailable_reason();
    return std::nullopt;
  }
  return runtime::Context(gpu_test::backend());
#else
  (void)why;
  return runtime::Context::cpu();
#endif
}

// Every op of one result dtype in one routine: one compile (a device compile costs far more than
// the ops it builds), each op over nodes of its own. When that routine fails, each op is compiled
// alone, so that the failures name the ops they come from.
TEST_P(OpParityTest, CompiledMatchesInterpreter) {
  std::string why;
  const auto compiled = compiled_context(why);
  if (!compiled) GTEST_SKIP() << why;
  std::vector<OpCase> of_dtype;
  for (const OpCase& c : all_cases())
    if (c.dtype == GetParam()) of_dtype.push_back(c);
  std::vector<BatchCase> cases;
  const ir::Comp comp = batch_comp(of_dtype, cases);
  const std::string name = "parity_" + std::string(ir::dtype_name(GetParam()));
  const auto interp = run_batch(runtime::Context::interpreter(), comp, cases, name);
  std::vector<std::vector<std::byte>> outs;
  try {
    outs = run_batch(*compiled, comp, cases, name);
  } catch (const UserError& e) {
    ADD_FAILURE() << "the routine of every op on " << ir::dtype_name(GetParam()) << " failed: " << e.what();
    for (std::size_t k = 0; k < cases.size(); ++k) {
      std::vector<BatchCase> alone;
      const ir::Comp one = batch_comp({cases[k].c}, alone);
      try {
        expect_cells_agree(alone[0], run_batch(*compiled, one, alone, "parity_" + cases[k].what())[0], interp[k],
                           " alone");
      } catch (const UserError& alone_error) {
        ADD_FAILURE() << cases[k].what() << " alone: " << alone_error.what();
      }
    }
    return;
  }
  for (std::size_t k = 0; k < cases.size(); ++k) expect_cells_agree(cases[k], outs[k], interp[k], "");
}

INSTANTIATE_TEST_SUITE_P(EveryDtype, OpParityTest, ::testing::ValuesIn(result_dtypes()), dtype_case_name);

#ifdef CANNL_TEST_GPU
// Every op on a 4-byte result dtype through the GPU's vector lanes (gpu_schedule_vectors=on: each
// pointwise nest of 64 cells becomes 16 threads of 4 Vectorized lanes, moved as 16-byte vectors,
// computed lane by lane), all in one routine (one device compile): within each op's tolerance of
// the interpreter, as above.
TEST(OpParityVectorLanes, EveryFourByteOpThroughTheLanesMatchesTheInterpreter) {
  std::string why;
  auto compiled = compiled_context(why);
  if (!compiled) GTEST_SKIP() << why;
  std::vector<OpCase> four_byte;
  for (const OpCase& c : all_cases())
    if (c.dtype == DType::F32 || c.dtype == DType::I32 || c.dtype == DType::U32) four_byte.push_back(c);
  std::vector<BatchCase> cases;
  const ir::Comp comp = batch_comp(four_byte, cases);
  ASSERT_GT(cases.size(), 50u);
  const auto interp = run_batch(runtime::Context::interpreter(), comp, cases, "parity_vector_lanes");
  test_util::ConfigGuard guard;
  config::set_override("gpu_schedule_vectors", "on");
  config::set_override("gpu_schedule_min_parallel", "4");  // 16 vectors a nest share it out
  std::string source;
  const auto lanes = run_batch(*compiled, comp, cases, "parity_vector_lanes", &source);
  ASSERT_NE(source.find(gpu_test::spelling().vector_loop), std::string::npos) << "no vector loop:\n" << source;
  for (std::size_t k = 0; k < cases.size(); ++k) expect_cells_agree(cases[k], lanes[k], interp[k], " through the lanes");
}
#endif

TEST(OpParityCoverage, EveryOpHasAtLeastOneDtype) {
  std::vector<bool> seen(ir::kOpCount, false);
  for (const auto& c : all_cases()) seen[static_cast<int>(c.op)] = true;
  for (int k = 0; k < ir::kOpCount; ++k)
    EXPECT_TRUE(seen[k]) << ir::op_name(static_cast<Op>(k)) << " is tested on no dtype";
}

}  // namespace
}  // namespace cannl::testing
