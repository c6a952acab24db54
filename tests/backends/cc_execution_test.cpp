// The cc backend compiles and runs routines; results agree with the interpreter bit for bit.
#include <gtest/gtest.h>

#include <bit>
#include <limits>
#include <random>
#include <set>

#include <cmath>

#include "backends/routines.h"
#include "backends/run_util.h"
#include "cannl/support/error.h"

namespace cannl {
namespace {

using namespace cannl::ir;
using test_util::Bytes;
using test_util::bytes_of;
using test_util::run_on;
using test_util::values_of;

using test_util::cc;

TEST(CcExecution, PointwiseAdd) {
  auto r = test_routines::pointwise_add(5);
  const std::vector<float> a{1, 2, 3, 4, 0.5f}, b{10, 20, 30, 40, 0.25f};
  auto out = run_on(*cc(), r, {bytes_of(a), bytes_of(b), {}});
  EXPECT_EQ(values_of<float>(out[2]), (std::vector<float>{11, 22, 33, 44, 0.75f}));
  EXPECT_EQ(values_of<float>(out[0]), a);  // inputs untouched
}

TEST(CcExecution, RowSumReduction) {
  auto r = test_routines::row_sum(2, 3);
  const std::vector<float> m{1, 2, 3, 4, 5, 6};
  auto out = run_on(*cc(), r, {bytes_of(m), bytes_of(std::vector<float>{7, 7})});
  EXPECT_EQ(values_of<float>(out[1]), (std::vector<float>{6, 15}));  // zero_out reset the 7s
}

TEST(CcExecution, AgreesWithInterpreterOnAddAndReduction) {
  auto interp = backends::make_interpreter_backend();
  auto r = test_routines::row_sum(3, 4);
  const std::vector<float> m{0.1f, 0.2f, 0.3f, 1e-8f, 5, 6, 7, 8, -1, 1e30f, -1e30f, 3};
  EXPECT_EQ(run_on(*cc(), r, {bytes_of(m)}), run_on(*interp, r, {bytes_of(m)}));
}

// y = x + 1 with x and y bound to one buffer: the generated pointers are restrict, so the run is
// refused, naming both nodes (on every backend: the check is shared).
// Tensors named like a macro of the headers the file includes (<stdint.h>'s INT32_MAX, <math.h>'s
// HUGE_VAL, <stdlib.h>'s EXIT_SUCCESS) get other identifiers: the preprocessor would replace a
// parameter of that name by the macro's value, and the compiler reject the file.
TEST(CcExecution, TensorsNamedLikeHeaderMacrosCompile) {
  for (const char* label : {"INT32_MAX", "UINT8_MAX", "SIZE_MAX", "HUGE_VAL", "EXIT_SUCCESS"}) {
    auto r = test_routines::pointwise_add(3, "add_macro");
    r.params[0]->label = label;
    const std::vector<float> a{1, 2, 3}, b{10, 20, 30};
    EXPECT_EQ(values_of<float>(run_on(*cc(), r, {bytes_of(a), bytes_of(b), {}})[2]), (std::vector<float>{11, 22, 33}))
        << label;
  }
}

// A NaN constant keeps its sign and payload, as the interpreter's does: C's NAN is the positive
// quiet NaN only, so any other NaN is printed by its bits.
TEST(CcExecution, NanConstantsKeepTheirSignAndPayload) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double payload = std::bit_cast<double>(std::uint64_t{0xfff4000020000000});
  for (const DType dtype : {DType::F32, DType::F64}) {
    const NodeRef y = make_node("y", dtype, {3});
    const auto body = seq({set(y, {AxisIndex::fixed(0)}, constant(nan, dtype)), set(y, {AxisIndex::fixed(1)}, constant(-nan, dtype)),
                           set(y, {AxisIndex::fixed(2)}, constant(payload, dtype))});
    const backends::CompileRequest r{{"nans", body, {}}, {y}};
    EXPECT_EQ(run_on(*cc(), r, {{}})[0], run_on(*backends::make_interpreter_backend(), r, {{}})[0]) << dtype_name(dtype);
  }
}

// trunc is an arithmetic operation: a signaling NaN comes out quiet, sign and payload kept (IEEE
// 754 6.2; SSE4.1's roundss and AArch64's frintz do so). The interpreter's truncf kept it
// signaling (GCC inlines truncf without SSE4.1 as bit operations), so cc and it disagreed.
TEST(CcExecution, TruncOfASignalingNanIsTheQuietNan) {
  for (const DType dtype : {DType::F32, DType::F64}) {
    auto x = make_node("x", dtype, {4}), y = make_node("y", dtype, {4});
    const Symbol i = fresh_symbol();
    const auto body = for_loop(i, 0, 4, set(y, {AxisIndex::iterator(i)},
                                            apply(Op::Trunc, dtype, {get(x, {AxisIndex::iterator(i)})})));
    const backends::CompileRequest r{LoweredRoutine{"trunc_nans", body, {}}, {x, y}};
    const bool f32 = dtype == DType::F32;
    const Bytes in = f32 ? bytes_of(std::vector<std::uint32_t>{0x7fa00000u, 0xffa00001u, 0x7fc00002u, 0x3fc00000u})
                         : bytes_of(std::vector<std::uint64_t>{0x7ff4000000000000u, 0xfff4000000000001u,
                                                               0x7ff8000000000002u, 0x3ff8000000000000u});
    const auto interpreted = run_on(*backends::make_interpreter_backend(), r, {in, {}})[1];
    const Bytes expected = f32 ? bytes_of(std::vector<std::uint32_t>{0x7fe00000u, 0xffe00001u, 0x7fc00002u, 0x3f800000u})
                               : bytes_of(std::vector<std::uint64_t>{0x7ffc000000000000u, 0xfffc000000000001u,
                                                                     0x7ff8000000000002u, 0x3ff0000000000000u});
    EXPECT_EQ(interpreted, expected) << dtype_name(dtype);
    EXPECT_EQ(run_on(*cc(), r, {in, {}})[1], interpreted) << dtype_name(dtype);
  }
}

// GCC's loop interchange (on at -O3, GCC 8 on) reorders the loops of a serial reduction nest and
// so the order of each cell's additions: the unscheduled routine below gave other bits than the
// interpreter under GCC 12 at -O3, -ffp-contract=off or not. The C backend turns the pass off.
TEST(CcExecution, LoopInterchangeKeepsTheOrderOfEachCellsSum) {
  auto a = make_node("a", DType::F32, {17, 6, 12, 33}), b = make_node("b", DType::F32, {6, 6, 33});
  auto d = make_node("d", DType::F32, {17, 6, 12});
  const Symbol i0 = fresh_symbol(), i1 = fresh_symbol(), i2 = fresh_symbol(), i3 = fresh_symbol(), i4 = fresh_symbol();
  auto it = [](Symbol s) { return AxisIndex::iterator(s); };
  const std::vector<AxisIndex> cell{it(i3), it(i1), it(i4)};
  const AxisIndex reversed{{{-1, i2}}, 32};
  const auto product = apply(Op::Mul, DType::F32, {get(a, {it(i3), it(i0), it(i4), it(i2)}), get(b, {it(i1), it(i0), reversed})});
  const auto body = seq({zero_out(d),
                         for_loop(i0, 0, 6, for_loop(i1, 0, 6, for_loop(i2, 0, 33, for_loop(i3, 0, 17, for_loop(i4, 0, 12,
                             set(d, cell, apply(Op::Add, DType::F32, {get(d, cell), product}), "d =+ a * b")))))) });
  const backends::CompileRequest r{LoweredRoutine{"interchangeable", body, {}}, {a, b, d}};
  std::mt19937 rng(7);
  auto values = [&](std::size_t n) {  // magnitudes from 1e-3 to 1e3: reordered sums round differently
    std::uniform_real_distribution<float> mantissa(-1, 1);
    std::vector<float> v(n);
    for (auto& x : v) x = mantissa(rng) * (rng() % 2 ? 1e3f : 1e-3f);
    return v;
  };
  const Bytes in_a = bytes_of(values(17 * 6 * 12 * 33)), in_b = bytes_of(values(6 * 6 * 33));
  EXPECT_EQ(run_on(*cc(), r, {in_a, in_b, {}})[2], run_on(*backends::make_interpreter_backend(), r, {in_a, in_b, {}})[2]);
}

TEST(CcExecution, TwoNodesBoundToOneBufferAreARuntimeUsageError) {
  auto x = make_node("x", DType::F32, {4}), y = make_node("y", DType::F32, {4});
  const Symbol i = fresh_symbol();
  const auto next = apply(Op::Add, DType::F32, {get(x, {AxisIndex::iterator(i)}), constant(1, DType::F32)});
  const backends::CompileRequest r{LoweredRoutine{"inc", for_loop(i, 0, 4, set(y, {AxisIndex::iterator(i)}, next)), {}}, {x, y}};
  for (const auto& backend : {cc(), backends::make_interpreter_backend()}) {
    auto buffer = backend->allocate(16);
    const std::vector<backends::Buffer*> same{buffer.get(), buffer.get()};
    try {
      backend->compile(r)->run(same, {});
      FAIL() << backend->name() << " ran";
    } catch (const RuntimeUsageError& e) {
      EXPECT_NE(std::string(e.what()).find("routine inc: nodes x and y are bound to one buffer"), std::string::npos)
          << e.what();
    }
  }
}

TEST(CcExecution, StaticIndexSelectsTheRow) {
  auto m = make_node("m", DType::I64, {3, 2});
  const Symbol s = fresh_symbol();
  const Symbol j = fresh_symbol();
  auto value = apply(Op::Add, DType::I64, {embed_index(AxisIndex::iterator(s)), constant(10, DType::I64)});
  auto body = for_loop(j, 0, 2, set(m, {AxisIndex::iterator(s), AxisIndex::iterator(j)}, value));
  backends::CompileRequest r{LoweredRoutine{"fill_row", body, {StaticSymbol{s, 3, "row"}}}, {m}};
  auto out = run_on(*cc(), r, {}, {1});
  EXPECT_EQ(values_of<std::int64_t>(out[0]), (std::vector<std::int64_t>{0, 0, 11, 11, 0, 0}));
  EXPECT_THROW(run_on(*cc(), r, {}, {3}), RuntimeUsageError);  // outside [0, 3)
}

TEST(CcExecution, LocalScopeAndIf) {
  auto a = make_node("a", DType::F32, {4});
  auto c = make_node("c", DType::F32, {4});
  const Symbol i = fresh_symbol();
  const std::vector<AxisIndex> at{AxisIndex::iterator(i)};
  const int v = fresh_scope_id();
  auto doubled = local_scope(v, DType::F32,
                             set_local(v, apply(Op::Mul, DType::F32, {get(a, at), constant(2, DType::F32)})));
  auto positive = apply(Op::Cmplt, DType::F32, {constant(0, DType::F32), get(a, at)});
  auto body = for_loop(i, 0, 4, if_then(positive, set(c, at, apply(Op::Add, DType::F32, {doubled, constant(1, DType::F32)}))));
  backends::CompileRequest r{LoweredRoutine{"scoped", body, {}}, {a, c}};
  const std::vector<float> in{1, -1, 2.5f, 0};
  auto out = run_on(*cc(), r, {bytes_of(in)});
  EXPECT_EQ(values_of<float>(out[1]), (std::vector<float>{3, 0, 6, 0}));
  EXPECT_EQ(out, run_on(*backends::make_interpreter_backend(), r, {bytes_of(in)}));
}

TEST(CcExecution, IntegerDivisionModuloAndWrapping) {
  constexpr std::int32_t kMin = std::numeric_limits<std::int32_t>::min();
  constexpr std::int32_t kMax = std::numeric_limits<std::int32_t>::max();
  const std::vector<std::int32_t> x{7, -7, 5, kMin, kMax, kMin};
  const std::vector<std::int32_t> y{2, 2, 0, -1, 1, 1};
  auto div = run_on(*cc(), test_routines::binary_op(Op::Div, DType::I32, 6), {bytes_of(x), bytes_of(y)});
  EXPECT_EQ(values_of<std::int32_t>(div[2]), (std::vector<std::int32_t>{3, -3, 0, kMin, kMax, kMin}));
  auto mod = run_on(*cc(), test_routines::binary_op(Op::Mod, DType::I32, 6), {bytes_of(x), bytes_of(y)});
  EXPECT_EQ(values_of<std::int32_t>(mod[2]), (std::vector<std::int32_t>{1, -1, 0, 0, 0, 0}));
  auto add = run_on(*cc(), test_routines::binary_op(Op::Add, DType::I32, 6), {bytes_of(x), bytes_of(y)});
  EXPECT_EQ(values_of<std::int32_t>(add[2])[4], kMin);  // kMax + 1 wraps
  const std::vector<std::uint8_t> p{200, 3}, q{100, 0};
  auto u8add = run_on(*cc(), test_routines::binary_op(Op::Add, DType::U8, 2), {bytes_of(p), bytes_of(q)});
  EXPECT_EQ(values_of<std::uint8_t>(u8add[2]), (std::vector<std::uint8_t>{44, 3}));
}

// Every op of test_routines::all_ops on x, y, z (converted to `t` by the interpreter, so both
// backends read identical bytes), on cc and on the interpreter: the outputs labelled in
// `labels` (all of them when empty) must agree bitwise; returns how many were compared.
// `values` as bytes of dtype `t`, converted by the interpreter.
test_util::Bytes bytes_in(DType t, const std::vector<double>& values) {
  const auto n = static_cast<std::int64_t>(values.size());
  return run_on(*backends::make_interpreter_backend(), test_routines::convert_copy(DType::F64, t, n),
                {bytes_of(values)})[1];
}

// Bytes of dtype `t` as doubles (exact for the float dtypes), converted by the interpreter.
std::vector<double> doubles_of(DType t, const test_util::Bytes& bytes) {
  const auto n = static_cast<std::int64_t>(bytes.size() / dtype_bytes(t));
  return values_of<double>(
      run_on(*backends::make_interpreter_backend(), test_routines::convert_copy(t, DType::F64, n), {bytes})[1]);
}

int expect_ops_agree(DType t, const std::vector<double>& xs, const std::vector<double>& ys,
                     const std::vector<double>& zs, const std::set<std::string>& labels = {}) {
  auto interp = backends::make_interpreter_backend();
  const auto n = static_cast<std::int64_t>(xs.size());
  auto to_t = [&](const std::vector<double>& v) { return bytes_in(t, v); };
  auto r = test_routines::all_ops(t, n);
  const std::vector<test_util::Bytes> in{to_t(xs), to_t(ys), to_t(zs)};
  const auto mine = run_on(*cc(), r, in);
  const auto reference = run_on(*interp, r, in);
  int compared = 0;
  for (std::size_t k = 3; k < r.params.size(); ++k) {
    if (!labels.empty() && !labels.contains(r.params[k]->label)) continue;
    ++compared;
    EXPECT_EQ(mine[k], reference[k]) << r.params[k]->label << " on " << dtype_name(t);
  }
  return compared;
}

TEST(CcExecution, EveryOpAgreesWithInterpreter) {
  const std::vector<double> xs{0.5, -1.5, 3, 0, 1e-3, -0.0, 7, 2, 200, -7};
  const std::vector<double> ys{2, 0.25, -3, 0, 4, 1, 0.5, 3, 100, 0};
  const std::vector<double> zs{1, -2, 0.125, 5, 0, 3, -1, 9, 255, 1e3};
  for (DType t : {DType::F32, DType::F64, DType::I32, DType::I64, DType::U32, DType::U64, DType::U8})
    EXPECT_GT(expect_ops_agree(t, xs, ys, zs), 0);
}

// The selects and max / min are rendered on bit masks (prelude_minmax.cpp): NaN operands, NaN
// payloads and signed zeros must come out as the interpreter's maximumNumber / minimumNumber and
// C-conditional selects do.
TEST(CcExecution, SelectsAndMinMaxKeepNanAndSignedZeroBits) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  const std::vector<double> xs{nan, 1, nan, -0.0, 0.0, -0.0, inf, -inf, nan, 3, 0.0, -2};
  const std::vector<double> ys{1, nan, nan, 0.0, -0.0, -0.0, nan, 5, -nan, -inf, 0.0, -2};
  const std::vector<double> zs{-0.0, nan, 2, nan, -1, 0.0, 7, -0.0, 4, nan, -3, 0.0};
  for (DType t : {DType::F32, DType::F64})
    EXPECT_EQ(expect_ops_agree(t, xs, ys, zs, {"out_max", "out_min", "out_where", "out_relu_gate", "out_sat01_gate"}), 5);
}

// out[i] = -fma(x[i], y[i], z[i]) where x*y + z cancels to +0: the negation is -0. GCC 12 folds
// a C minus of fmaf into one fnmsub, -(x*y) - z, which gives +0 (ops.def, Neg); the printer
// flips the sign bit instead. The second form is a fused dot product negated, as autodiff makes.
TEST(CcExecution, NegatingAFusedSumThatCancelsGivesMinusZero) {
  for (DType t : {DType::F32, DType::F64}) {
    SCOPED_TRACE(dtype_name(t));
    auto x = make_node("x", t, {4});
    auto y = make_node("y", t, {4});
    auto z = make_node("z", t, {4});
    auto neg_fma = make_node("neg_fma", t, {4});
    auto neg_dot = make_node("neg_dot", t, {1});
    const Symbol i = fresh_symbol();
    const std::vector<AxisIndex> at{AxisIndex::iterator(i)};
    auto fused = apply(Op::Fma, t, {get(x, at), get(y, at), get(z, at)});
    auto pointwise = for_loop(i, 0, 4, set(neg_fma, at, apply(Op::Neg, t, {fused})));
    const int v = fresh_scope_id();
    const Symbol k = fresh_symbol();
    const std::vector<AxisIndex> ak{AxisIndex::iterator(k)};
    auto chain = for_loop(k, 0, 4, set_local(v, apply(Op::Fma, t, {get(x, ak), get(y, ak), get_local(v, t)})));
    auto dot = local_scope(v, t, seq({set_local(v, constant(0, t)), chain}));
    auto reduce = set(neg_dot, {AxisIndex::fixed(0)}, apply(Op::Neg, t, {dot}));
    backends::CompileRequest r{LoweredRoutine{"neg_fma_" + std::string(dtype_name(t)), seq({pointwise, reduce}), {}},
                               {x, y, z, neg_fma, neg_dot}};
    // x*y + z is 0 in every cell, and x . y = 1.5*2 - 2*1.5 + 3*1 - 0.25*12 = 0.
    const std::vector<double> xs{1.5, -2, 3, 0.25}, ys{2, 1.5, 1, -12}, zs{-3, 3, -3, 3};
    const std::vector<test_util::Bytes> in{bytes_in(t, xs), bytes_in(t, ys), bytes_in(t, zs)};
    const auto out = run_on(*cc(), r, in);
    EXPECT_EQ(out, run_on(*backends::make_interpreter_backend(), r, in));
    std::vector<double> negated = doubles_of(t, out[3]);
    negated.push_back(doubles_of(t, out[4])[0]);
    for (double value : negated) EXPECT_TRUE(value == 0 && std::signbit(value)) << value;
  }
}

}  // namespace
}  // namespace cannl
