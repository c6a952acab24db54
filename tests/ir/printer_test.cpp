// Loop-IR printer snapshots and nodes_of (src/ir/printer.cpp, loop_ir_nodes.cpp).
#include <gtest/gtest.h>

#include "ir_test_util.h"

namespace cannl::ir {
namespace {

using testing::it;

TEST(Printer, RoutineWithStaticsLoopsAndComments) {
  auto a = make_node("a", DType::F32, {4, 64}), b = make_node("b", DType::F32, {64});
  auto c = make_node("c", DType::F32, {64});
  const StaticSymbol batch{fresh_symbol(), 4, "batch"};
  const Symbol i = fresh_symbol();
  auto body = seq({comment("forward"), zero_out(c),
                   for_loop(i, 0, 64,
                            set(c, {it(i)},
                                apply(Op::Add, DType::F32,
                                      {get(a, {it(batch.symbol), it(i)}), get(b, {it(i)})}),
                                "c =: a + b"))});
  EXPECT_EQ(print_loop_ir({"train_step", body, {batch}}),
            "# train_step (statics: batch)\n"
            "# forward\n"
            "zero_out c\n"
            "for i0 in [0, 64):\n"
            "  c[i0] = add(a[batch, i0], b[i0])   # c =: a + b\n");
}

TEST(Printer, SymbolsAreNumberedPerPrintout) {
  auto c = make_node("c", DType::F32, {3, 3});
  const Symbol i = fresh_symbol(), j = fresh_symbol();
  auto nest = for_loop(j, 0, 3, for_loop(i, 1, 3, set(c, {AxisIndex{{{2, i}}, -1}, it(j)},
                                                      embed_index(AxisIndex{{{-1, j}}, 2}))));
  EXPECT_EQ(print_stmt(nest),
            "for i0 in [0, 3):\n"
            "  for i1 in [1, 3):\n"
            "    c[2*i1 - 1, i0] = index(-i0 + 2)\n");
  // An unbound symbol is visible as such rather than silently renamed.
  const Symbol free = fresh_symbol();
  EXPECT_EQ(print_scalar(get(c, {it(free), AxisIndex::fixed(0)})),
            "c[?i" + std::to_string(free.id) + ", 0]");
}

TEST(Printer, SharedLabelsAndNoLabelGetPositionSuffixes) {
  // Positions in order of first appearance, never ids: the same program built again prints (and
  // digests) the same.
  auto x1 = make_node("x", DType::F32, {}), x2 = make_node("x", DType::F32, {});
  auto y = make_node("y", DType::F32, {});
  auto unlabeled = make_node("", DType::F32, {});
  const std::string text =
      print_stmt(seq({set(x2, {}, get(x1, {})), set(y, {}, get(x2, {})), set(unlabeled, {}, get(y, {}))}));
  EXPECT_EQ(text, "x#0 = x#1\ny = x#0\nn#3 = y\n");
}

TEST(Printer, ConstantsAndDtypes) {
  EXPECT_EQ(print_scalar(constant(0.1, DType::F32)), "0.1");
  EXPECT_EQ(print_scalar(constant(1.0 / 3.0, DType::F64)), "0.3333333333333333:f64");
  EXPECT_EQ(print_scalar(constant_bits(-5, DType::I64)), "bits(-5)");
  EXPECT_EQ(print_scalar(constant_bits(7, DType::U4x32)), "bits(7):u4x32");
  EXPECT_EQ(print_scalar(apply(Op::Max, DType::I32,
                               {constant(1, DType::I32), constant(-INFINITY, DType::F32)})),
            "max:i32(1:i32, -inf)");
}

TEST(Printer, LocalsScopesAndGuards) {
  auto a = make_node("a", DType::F32, {3}), c = make_node("c", DType::F32, {});
  const Symbol k = fresh_symbol();
  const int scope = fresh_scope_id(), declared = fresh_scope_id();
  auto scoped = local_scope(
      scope, DType::F32,
      for_loop(k, 0, 3, set_local(scope, apply(Op::Add, DType::F32,
                                               {get_local(scope, DType::F32), get(a, {it(k)})}))));
  auto body = seq({declare_local(declared, DType::F64, true),
                   set_local(declared, constant(2, DType::F64)),
                   if_then(apply(Op::Cmplt, DType::F32, {get(c, {}), constant(1, DType::F32)}),
                           set(c, {}, apply(Op::Mul, DType::F32,
                                            {scoped, get_local(declared, DType::F64)})))});
  EXPECT_EQ(print_stmt(body),
            "declare v0:f64 = 0\n"
            "v0 := 2:f64\n"
            "if lt(c, 1):\n"
            "  c = mul({scope v1:\n"
            "      for i0 in [0, 3):\n"
            "        v1 := add(v1, a[i0])\n"
            "    }, v0)\n");
}

TEST(Printer, NodesOfInFirstOccurrenceOrder) {
  auto a = make_node("a", DType::F32, {}), b = make_node("b", DType::F32, {});
  auto c = make_node("c", DType::F32, {}), d = make_node("d", DType::F32, {});
  auto inner = local_scope(fresh_scope_id(), DType::F32, set(d, {}, get(a, {})));
  auto body = seq({zero_out(c), set(b, {}, apply(Op::Add, DType::F32, {get(a, {}), inner})),
                   set(c, {}, get(b, {}))});
  std::vector<std::string> labels;
  for (const auto& n : nodes_of(body)) labels.push_back(n->label);
  EXPECT_EQ(labels, (std::vector<std::string>{"c", "b", "a", "d"}));
  EXPECT_EQ(nodes_of(get(b, {})).size(), 1u);
}

}  // namespace
}  // namespace cannl::ir
