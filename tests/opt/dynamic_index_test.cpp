// GetDynamic (guarded gather at a runtime row) and SetDynamic (guarded serial scatter-accumulate)
// on hand-built routines, run on the interpreter backend and on the C backend: the documented
// values (loop_ir.h), and bitwise agreement between both backends.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "backends/run_util.h"
#include "cannl/ir/verify.h"

namespace cannl {
namespace {

using namespace cannl::ir;
using test_util::Bytes;
using test_util::bytes_of;
using test_util::run_on;
using test_util::values_of;

using test_util::cc;

// Runs on both backends, checks they agree bit for bit, returns the interpreter's buffers.
std::vector<Bytes> run_both(const backends::CompileRequest& r, const std::vector<Bytes>& inputs) {
  ir::verify(r.routine);
  const auto reference = run_on(*backends::make_interpreter_backend(), r, inputs);
  const auto compiled = run_on(*cc(), r, inputs);
  EXPECT_EQ(reference, compiled) << ir::print_loop_ir(r.routine);
  return reference;
}

AxisIndex it(Symbol s) { return AxisIndex::iterator(s); }

// out[p, d] = table[ids[p], d] (a zero row for an id that selects none); params table, ids, out.
backends::CompileRequest gather_rows(DType id_dtype, std::int64_t positions) {
  auto table = make_node("table", DType::F32, {4, 3});
  auto ids = make_node("ids", id_dtype, {positions});
  auto out = make_node("out", DType::F32, {positions, 3});
  const Symbol p = fresh_symbol(), d = fresh_symbol();
  auto row = get_dynamic(table, {AxisIndex::fixed(0), it(d)}, 0, get(ids, {it(p)}));
  auto body = for_loop(p, 0, positions, for_loop(d, 0, 3, set(out, {it(p), it(d)}, row, "out =: table[ids]")));
  return {LoweredRoutine{"gather_rows", body, {}}, {table, ids, out}};
}

std::vector<float> table_values() { return {1, 2, 3, 10, 20, 30, 100, 200, 300, 1000, 2000, 3000}; }

TEST(DynamicIndex, GatherReadsInRangeRowsAndZerosOtherwise) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<float> ids{2, 0, 4, -1, 1.5f, 3, nan, -0.0f};
  const auto out = run_both(gather_rows(DType::F32, 8), {bytes_of(table_values()), bytes_of(ids), {}});
  EXPECT_EQ(values_of<float>(out[2]), (std::vector<float>{100, 200, 300, 1, 2, 3, 0, 0, 0, 0, 0, 0, 0, 0, 0,
                                                          1000, 2000, 3000, 0, 0, 0, 1, 2, 3}));
}

TEST(DynamicIndex, GatherWithIntegerIdsIncludingHugeValues) {
  const std::vector<std::int64_t> ids{1, std::numeric_limits<std::int64_t>::max(),
                                      std::numeric_limits<std::int64_t>::min(), 3, 4};
  const auto out = run_both(gather_rows(DType::I64, 5), {bytes_of(table_values()), bytes_of(ids), {}});
  EXPECT_EQ(values_of<float>(out[2]),
            (std::vector<float>{10, 20, 30, 0, 0, 0, 0, 0, 0, 1000, 2000, 3000, 0, 0, 0}));
}

TEST(DynamicIndex, GatherOnAnInnerAxisInsideAnExpression) {
  // out[p] = 1 + m[p, col[p]] (col is the dynamic axis 1 of m, dims {2, 3}).
  auto m = make_node("m", DType::F64, {2, 3});
  auto col = make_node("col", DType::U8, {2});
  auto out = make_node("out", DType::F64, {2});
  const Symbol p = fresh_symbol();
  auto pick = get_dynamic(m, {it(p), AxisIndex::fixed(0)}, 1, get(col, {it(p)}));
  auto body = for_loop(p, 0, 2, set(out, {it(p)}, apply(Op::Add, DType::F64, {constant(1, DType::F64), pick})));
  const auto got = run_both({LoweredRoutine{"gather_col", body, {}}, {m, col, out}},
                            {bytes_of(std::vector<double>{0.5, 1.5, 2.5, 3.5, 4.5, 5.5}),
                             bytes_of(std::vector<std::uint8_t>{2, 3}), {}});
  EXPECT_EQ(values_of<double>(got[2]), (std::vector<double>{3.5, 1}));
}

TEST(DynamicIndex, RowVariableNamesDoNotClashWithNodeNames) {
  // The C printer names rows r<k>: a node labelled r0 must get another identifier.
  auto r0 = make_node("r0", DType::F32, {2});
  auto ids = make_node("r1", DType::I32, {1});
  auto out = make_node("out", DType::F32, {1});
  const Symbol p = fresh_symbol();
  auto body = for_loop(p, 0, 1, set(out, {it(p)}, get_dynamic(r0, {AxisIndex::fixed(0)}, 0, get(ids, {it(p)}))));
  const auto got = run_both({LoweredRoutine{"clash", body, {}}, {r0, ids, out}},
                            {bytes_of(std::vector<float>{7, 8}), bytes_of(std::vector<std::int32_t>{1}), {}});
  EXPECT_EQ(values_of<float>(got[2]), (std::vector<float>{8}));
}

// grad[ids[p], d] += g[p, d] for p in order; params ids, g, grad.
backends::CompileRequest scatter_rows(std::int64_t positions, Op accum = Op::Add) {
  auto ids = make_node("ids", DType::F32, {positions});
  auto g = make_node("g", DType::F32, {positions, 2});
  auto grad = make_node("grad", DType::F32, {3, 2});
  const Symbol p = fresh_symbol(), d = fresh_symbol();
  auto body = for_loop(p, 0, positions, for_loop(d, 0, 2,
      set_dynamic(grad, {AxisIndex::fixed(0), it(d)}, 0, get(ids, {it(p)}), get(g, {it(p), it(d)}), accum,
                  "grad =+ g")));
  return {LoweredRoutine{"scatter_rows", body, {}}, {ids, g, grad}};
}

TEST(DynamicIndex, ScatterAccumulatesDuplicatesInSerialOrder) {
  // Row 1 starts at 1 and receives 1e8, 1, -1e8 in that order: in f32 that is 0, not 2.
  const std::vector<float> ids{1, 0, 1, 1, 2};
  const std::vector<float> g{1e8f, 5, 7, 8, 1, 2, -1e8f, 3, 0.5f, 0.25f};
  const std::vector<float> initial{1, 1, 1, 1, 1, 1};
  const auto out = run_both(scatter_rows(5), {bytes_of(ids), bytes_of(g), bytes_of(initial)});
  std::vector<float> expected = initial;
  for (std::size_t p = 0; p < ids.size(); ++p)
    for (std::size_t d = 0; d < 2; ++d) expected[static_cast<std::size_t>(ids[p]) * 2 + d] += g[p * 2 + d];
  EXPECT_EQ(values_of<float>(out[2]), expected);
  EXPECT_EQ(values_of<float>(out[2])[2], 0.0f);  // ((1 + 1e8) + 1) - 1e8 in serial f32 order
}

TEST(DynamicIndex, ScatterOutOfRangeIdsWriteNothing) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<float> ids{3, -1, 0.5f, nan, 2};
  const std::vector<float> g{1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
  const auto out = run_both(scatter_rows(5), {bytes_of(ids), bytes_of(g), {}});
  EXPECT_EQ(values_of<float>(out[2]), (std::vector<float>{0, 0, 0, 0, 9, 10}));
}

TEST(DynamicIndex, ScatterWithAnotherAccumulator) {
  const std::vector<float> ids{0, 0, 2};
  const std::vector<float> g{-5, 4, 3, -2, -1, -1};
  const std::vector<float> initial{0, 0, 7, 7, -3, -3};
  const auto out = run_both(scatter_rows(3, Op::Max), {bytes_of(ids), bytes_of(g), bytes_of(initial)});
  EXPECT_EQ(values_of<float>(out[2]), (std::vector<float>{3, 4, 7, 7, -1, -1}));
}

TEST(DynamicIndex, ScatterIntoANarrowNodeRoundsOncePerStore) {
  // An f16 node accumulates in f32 and is rounded at every store, like a Set.
  auto ids = make_node("ids", DType::I32, {3});
  auto g = make_node("g", DType::F32, {3});
  auto acc = make_node("acc", DType::F16, {2});
  const Symbol p = fresh_symbol();
  auto body = for_loop(p, 0, 3, set_dynamic(acc, {AxisIndex::fixed(0)}, 0, get(ids, {it(p)}), get(g, {it(p)})));
  const auto out = run_both({LoweredRoutine{"scatter_f16", body, {}}, {ids, g, acc}},
                            {bytes_of(std::vector<std::int32_t>{1, 1, 1}),
                             bytes_of(std::vector<float>{2048, 0.5f, 0.5f}), {}});
  // 2048 + 0.5 rounds to 2048 in f16 (ties to even) twice: 0x6800 is 2048.
  EXPECT_EQ(values_of<std::uint16_t>(out[2]), (std::vector<std::uint16_t>{0, 0x6800}));
}

TEST(DynamicIndex, ScatterValueWithALocalScope) {
  // grad[ids[p]] += {v := g[p] * 2} exercises scope hoisting inside the guarded block.
  auto ids = make_node("ids", DType::I64, {3});
  auto g = make_node("g", DType::F32, {3});
  auto grad = make_node("grad", DType::F32, {2});
  const Symbol p = fresh_symbol();
  const int v = fresh_scope_id();
  auto doubled = local_scope(v, DType::F32, set_local(v, apply(Op::Mul, DType::F32, {get(g, {it(p)}), constant(2, DType::F32)})));
  auto body = for_loop(p, 0, 3, set_dynamic(grad, {AxisIndex::fixed(0)}, 0, get(ids, {it(p)}), doubled));
  const auto out = run_both({LoweredRoutine{"scatter_scope", body, {}}, {ids, g, grad}},
                            {bytes_of(std::vector<std::int64_t>{1, 5, 1}),
                             bytes_of(std::vector<float>{1.5f, 100, 2}), {}});
  EXPECT_EQ(values_of<float>(out[2]), (std::vector<float>{0, 7}));
}

}  // namespace
}  // namespace cannl
