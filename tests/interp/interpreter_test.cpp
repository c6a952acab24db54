// The interpreter on hand-built loop IR: every statement and scalar form, addressing, locals,
// statics, storage formats, and the InternalErrors for malformed IR.
#include "cannl/interp/interpreter.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "cannl/support/float_codecs.h"
#include "interp/test_memory.h"

namespace cannl::interp {
namespace {

using namespace cannl::ir;
using testing::expect_internal_error;
using testing::routine_of;
using testing::TestMemory;

AxisIndex at(Symbol s) { return AxisIndex::iterator(s); }
AxisIndex fixed(std::int64_t v) { return AxisIndex::fixed(v); }

TEST(Interpreter, VectorAddOverHalfOpenLoop) {
  TestMemory mem;
  auto a = mem.add(make_node("a", DType::F32, {4}));
  auto b = mem.add(make_node("b", DType::F32, {4}));
  auto c = mem.add(make_node("c", DType::F32, {4}));
  mem.fill<float>(a, {1, 2, 3, 4});
  mem.fill<float>(b, {10, 20, 30, 40});
  mem.fill<float>(c, {-1, -1, -1, -1});
  Symbol i = fresh_symbol();
  auto sum = apply(Op::Add, DType::F32, {get(a, {at(i)}), get(b, {at(i)})});
  run(routine_of(for_loop(i, 1, 3, set(c, {at(i)}, sum))), mem.buffers(), {});
  EXPECT_EQ(mem.read<float>(c), (std::vector<float>{-1, 22, 33, -1}));
}

TEST(Interpreter, RowMajorAddressingWithEmbedIndex) {
  TestMemory mem;
  auto c = mem.add(make_node("c", DType::I32, {2, 3}));
  Symbol i = fresh_symbol(), j = fresh_symbol();
  AxisIndex ten_i_plus_j{{{10, i}, {1, j}}, 0};
  auto body =
      for_loop(i, 0, 2, for_loop(j, 0, 3, set(c, {at(i), at(j)}, embed_index(ten_i_plus_j))));
  run(routine_of(body), mem.buffers(), {});
  EXPECT_EQ(mem.read<std::int32_t>(c), (std::vector<std::int32_t>{0, 1, 2, 10, 11, 12}));
}

TEST(Interpreter, AffineIndexWithStaticSymbol) {
  TestMemory mem;
  auto a = mem.add(make_node("a", DType::F64, {8}));
  auto c = mem.add(make_node("c", DType::F64, {2}));
  mem.fill<double>(a, {0, 1, 2, 3, 4, 5, 6, 7});
  Symbol i = fresh_symbol(), batch = fresh_symbol();
  AxisIndex src{{{2, batch}, {1, i}}, 1};  // 2*batch + i + 1
  LoweredRoutine r{"r", for_loop(i, 0, 2, set(c, {at(i)}, get(a, {src}))), {{batch, 3, "batch"}}};
  const std::int64_t statics[] = {2};
  run(r, mem.buffers(), statics);
  EXPECT_EQ(mem.read<double>(c), (std::vector<double>{5, 6}));
}

TEST(Interpreter, ZeroOutClearsPaddingToo) {
  TestMemory mem;
  auto n = make_node("p", DType::F32, {5});
  n->padding = {{1, 1}};
  mem.add(n);
  mem.fill<float>(n, {7, 7, 7, 7, 7});
  run(routine_of(zero_out(n)), mem.buffers(), {});
  EXPECT_EQ(mem.read<float>(n), (std::vector<float>(5, 0.0f)));
}

TEST(Interpreter, SeqRunsInOrderAndCommentsDoNothing) {
  TestMemory mem;
  auto c = mem.add(make_node("c", DType::I64, {}));
  auto body = seq({set(c, {}, constant(1, DType::I64)), comment("overwrite"),
                   set(c, {}, constant_bits(std::int64_t{1} << 60, DType::I64))});
  run(routine_of(body), mem.buffers(), {});
  EXPECT_EQ(mem.read<std::int64_t>(c)[0], std::int64_t{1} << 60);
}

TEST(Interpreter, SetConvertsToTheNodeDtype) {
  TestMemory mem;
  auto i = mem.add(make_node("i", DType::I32, {}));
  auto u = mem.add(make_node("u", DType::U32, {}));
  auto h = mem.add(make_node("h", DType::BF16, {}));
  auto body = seq({set(i, {}, constant(-3.7, DType::F32)), set(u, {}, constant(-1.5, DType::F64)),
                   set(h, {}, constant(1.0, DType::F64))});
  run(routine_of(body), mem.buffers(), {});
  EXPECT_EQ(mem.read<std::int32_t>(i)[0], -3);
  EXPECT_EQ(mem.read<std::uint32_t>(u)[0], 0u);
  EXPECT_EQ(mem.read<std::uint16_t>(h)[0], 0x3F80);
}

TEST(Interpreter, NarrowFloatsComputeInF32AndNarrowOnStore) {
  TestMemory mem;
  auto a = mem.add(make_node("a", DType::F16, {2}));
  auto c = mem.add(make_node("c", DType::F16, {2}));
  mem.fill<std::uint16_t>(a, {f32_to_f16(1.0f), f32_to_f16(2048.0f)});
  Symbol i = fresh_symbol();
  // 2048 + 1 is not an f16 (spacing 2 there): the store rounds to even, 2048.
  auto plus_one = apply(Op::Add, DType::F32, {get(a, {at(i)}), constant(1, DType::F32)});
  run(routine_of(for_loop(i, 0, 2, set(c, {at(i)}, plus_one))), mem.buffers(), {});
  EXPECT_EQ(mem.read<std::uint16_t>(c),
            (std::vector<std::uint16_t>{f32_to_f16(2.0f), f32_to_f16(2048.0f)}));
}

TEST(Interpreter, IfRunsBodyOnlyWhenConditionNonzero) {
  TestMemory mem;
  auto c = mem.add(make_node("c", DType::U8, {4}));
  Symbol i = fresh_symbol();
  auto lt2 = apply(Op::Cmplt, DType::I64, {embed_index(at(i)), constant(2, DType::I64)});
  auto body = for_loop(i, 0, 4, if_then(lt2, set(c, {at(i)}, constant(9, DType::U8))));
  run(routine_of(body), mem.buffers(), {});
  EXPECT_EQ(mem.read<std::uint8_t>(c), (std::vector<std::uint8_t>{9, 9, 0, 0}));
}

TEST(Interpreter, LocalScopeStartsAtZeroAndAccumulates) {
  TestMemory mem;
  auto a = mem.add(make_node("a", DType::F32, {3}));
  auto c = mem.add(make_node("c", DType::F32, {}));
  mem.fill<float>(a, {1.5f, 2.5f, 4.0f});
  const int v = fresh_scope_id();
  Symbol j = fresh_symbol();
  auto acc = apply(Op::Add, DType::F32, {get_local(v, DType::F32), get(a, {at(j)})});
  auto total = local_scope(v, DType::F32, for_loop(j, 0, 3, set_local(v, acc)));
  // Used twice: each evaluation starts again from zero.
  run(routine_of(set(c, {}, apply(Op::Add, DType::F32, {total, total}))), mem.buffers(), {});
  EXPECT_EQ(mem.read<float>(c)[0], 16.0f);
}

TEST(Interpreter, DeclaredLocalsLiveAcrossStatementsAndConvert) {
  TestMemory mem;
  auto c = mem.add(make_node("c", DType::F32, {}));
  const int v = fresh_scope_id();
  auto body =
      seq({declare_local(v, DType::I32, true), set_local(v, constant(7.9, DType::F64)),
           set(c, {},
               apply(Op::Mul, DType::F32, {get_local(v, DType::I32), constant(2, DType::F32)}))});
  run(routine_of(body), mem.buffers(), {});
  EXPECT_EQ(mem.read<float>(c)[0], 14.0f);  // 7.9 truncated to i32 7 on SetLocal
}

TEST(Interpreter, ThreefryAndUniformThroughU4x32Nodes) {
  TestMemory mem;
  auto key = mem.add(make_node("key", DType::U4x32, {}));
  auto bits = mem.add(make_node("bits", DType::U4x32, {}));
  auto u = mem.add(make_node("u", DType::F32, {}));
  mem.fill<std::uint32_t>(key, {0, 0, 0, 0});
  auto fry = apply(Op::ThreefryCrypto, DType::U4x32, {get(key, {}), constant(0, DType::I32)});
  auto body =
      seq({set(bits, {}, fry), set(u, {}, apply(Op::Uniform1, DType::F32, {get(bits, {})}))});
  run(routine_of(body), mem.buffers(), {});
  EXPECT_EQ(mem.read<std::uint32_t>(bits),
            (std::vector<std::uint32_t>{0x9c6ca96a, 0xe17eae66, 0xfc10ecd4, 0x5256a7d8}));
  EXPECT_EQ(mem.read<float>(u)[0], static_cast<float>(0x9c6ca96au >> 8) * 0x1p-24f);
}

TEST(InterpreterErrors, OutOfBoundsReadNamesNodeIndexAndDims) {
  TestMemory mem;
  auto a = mem.add(make_node("weights", DType::F32, {2, 3}));
  auto c = mem.add(make_node("c", DType::F32, {}));
  auto body = set(c, {}, get(a, {fixed(1), fixed(3)}));
  expect_internal_error([&] { run(routine_of(body), mem.buffers(), {}); },
                        {"out-of-bounds", "weights", "[1, 3]", "dims [2, 3]"});
}

TEST(InterpreterErrors, OutOfBoundsWriteFromLoop) {
  TestMemory mem;
  auto c = mem.add(make_node("out", DType::I32, {4}));
  Symbol i = fresh_symbol();
  auto body = for_loop(i, 0, 5, set(c, {at(i)}, constant(1, DType::I32)));
  expect_internal_error([&] { run(routine_of(body), mem.buffers(), {}); },
                        {"out-of-bounds", "out", "[4]", "dims [4]"});
}

TEST(InterpreterErrors, NegativeIndexAndWrongIndexCount) {
  TestMemory mem;
  auto a = mem.add(make_node("a", DType::F32, {4}));
  expect_internal_error(
      [&] { run(routine_of(set(a, {fixed(-1)}, constant(0, DType::F32))), mem.buffers(), {}); },
      {"out-of-bounds", "[-1]"});
  expect_internal_error(
      [&] { run(routine_of(set(a, {}, constant(0, DType::F32))), mem.buffers(), {}); },
      {"a (n", "0 indices"});
}

TEST(InterpreterErrors, MissingOrShortBuffer) {
  TestMemory mem;
  auto a = make_node("ghost", DType::F32, {4});
  expect_internal_error([&] { run(routine_of(zero_out(a)), mem.buffers(), {}); },
                        {"no buffer", "ghost"});
  std::vector<std::byte> small(8);
  Buffers buffers{{a->id, std::span<std::byte>(small)}};
  expect_internal_error([&] { run(routine_of(zero_out(a)), buffers, {}); },
                        {"ghost", "8 bytes, needs 16"});
}

TEST(InterpreterErrors, UnboundSymbolsLocalsAndStatics) {
  TestMemory mem;
  auto c = mem.add(make_node("c", DType::I64, {}));
  Symbol free_symbol = fresh_symbol();
  expect_internal_error(
      [&] { run(routine_of(set(c, {}, embed_index(at(free_symbol)))), mem.buffers(), {}); },
      {"not bound"});
  expect_internal_error(
      [&] { run(routine_of(set_local(12345678, constant(0, DType::F32))), mem.buffers(), {}); },
      {"undeclared local"});
  expect_internal_error(
      [&] { run(routine_of(set(c, {}, get_local(12345678, DType::I64))), mem.buffers(), {}); },
      {"undeclared local"});
  LoweredRoutine r{"needs_static", comment("x"), {{fresh_symbol(), 4, "batch"}}};
  expect_internal_error([&] { run(r, mem.buffers(), {}); }, {"needs_static", "1 statics, got 0"});
}

TEST(InterpreterErrors, UndefinedOpForIntegers) {
  TestMemory mem;
  auto c = mem.add(make_node("c", DType::I32, {}));
  auto body = set(c, {}, apply(Op::Exp, DType::I32, {constant(1, DType::I32)}));
  expect_internal_error([&] { run(routine_of(body), mem.buffers(), {}); }, {"exp", "undefined"});
}

}  // namespace
}  // namespace cannl::interp
