// The block-reduction form (ir/block_reduction.h) a GPU renders as a tree: which WorkgroupReduce
// loops are in it (plain, under a Split's remainder guard, a sum's accumulator second, an fma)
// and which are not (a max with the accumulator second, guards the renderer cannot bound, a
// value reading the cell). The renders themselves run on OpenCL in
// tests/gpu/gpu_block_reduction_test.cpp.
#include "cannl/ir/block_reduction.h"

#include <gtest/gtest.h>

namespace cannl::ir {
namespace {

AxisIndex it(Symbol s) { return AxisIndex::iterator(s); }

struct Row {
  NodeRef x = make_node("x", DType::F32, {4, 100});
  NodeRef s = make_node("s", DType::F32, {4});
  Symbol i = fresh_symbol(), r = fresh_symbol(), o = fresh_symbol();

  ScalarRef cell() const { return get(s, {it(i)}); }
  ScalarRef value() const { return get(x, {it(i), it(r)}); }
  For loop(StmtRef body) const { return For{r, 0, 64, std::move(body), AxisType::WorkgroupReduce}; }
  StmtRef store(ScalarRef v) const { return set(s, {it(i)}, std::move(v)); }
  // `before + r < bound` in `dtype`, the Split's remainder guard when before = 64 o, dtype i64.
  ScalarRef below(AxisIndex index, std::int64_t bound, DType dtype = DType::I64) const {
    return apply(Op::Cmplt, dtype, {embed_index(std::move(index)), constant(static_cast<double>(bound), DType::I64)});
  }
};

TEST(BlockReduction, TheFormsAGpuRendersAsATree) {
  const Row t;
  const auto plain = block_reduction(t.loop(t.store(apply(Op::Max, DType::F32, {t.cell(), t.value()}))));
  ASSERT_TRUE(plain.has_value());
  EXPECT_EQ(plain->accum, Op::Max);
  EXPECT_FALSE(plain->guard.has_value());
  // A sum with the accumulator second, and an fma: sums (of the products).
  const auto second = block_reduction(t.loop(t.store(apply(Op::Add, DType::F32, {t.value(), t.cell()}))));
  ASSERT_TRUE(second.has_value());
  EXPECT_EQ(second->accum, Op::Add);
  const auto fused = block_reduction(t.loop(t.store(apply(Op::Fma, DType::F32, {t.value(), t.value(), t.cell()}))));
  ASSERT_TRUE(fused.has_value());
  EXPECT_EQ(fused->accum, Op::Add);
  EXPECT_EQ(print_scalar(fused->value), print_scalar(apply(Op::Mul, DType::F32, {t.value(), t.value()})));
  // Under the remainder guard `64 o + r + 3 < 100`: the slice's steps are those below 100 - (64 o + 3).
  const AxisIndex index{{{64, t.o}, {1, t.r}}, 3};
  const auto guarded = block_reduction(t.loop(if_then(t.below(index, 100), t.store(apply(Op::Add, DType::F32, {t.cell(), t.value()})))));
  ASSERT_TRUE(guarded.has_value());
  ASSERT_TRUE(guarded->guard.has_value());
  EXPECT_EQ(guarded->guard->bound, 100);
  EXPECT_EQ(guarded->guard->before, (AxisIndex{{{64, t.o}}, 3}));
}

TEST(BlockReduction, FormsATreeWouldComputeDifferentlyAreRefused) {
  const Row t;
  const auto sum = t.store(apply(Op::Add, DType::F32, {t.cell(), t.value()}));
  // max(v, d): with two NaNs maximumNumber keeps its first operand, the serial loop's last v.
  EXPECT_FALSE(block_reduction(t.loop(t.store(apply(Op::Max, DType::F32, {t.value(), t.cell()})))));
  EXPECT_FALSE(block_reduction(t.loop(t.store(apply(Op::Min, DType::F32, {t.value(), t.cell()})))));
  // A value reading the cell, two statements, a subtraction.
  EXPECT_FALSE(block_reduction(t.loop(t.store(apply(Op::Add, DType::F32, {t.cell(), t.cell()})))));
  EXPECT_FALSE(block_reduction(t.loop(seq({sum, sum}))));
  EXPECT_FALSE(block_reduction(t.loop(t.store(apply(Op::Sub, DType::F32, {t.cell(), t.value()})))));
  // Guards whose bound on r the renderer cannot work out exactly: r at coefficient 2, r absent,
  // a compare in f32 (rounding past 2^24), a bound that is no exact integer, any other condition.
  EXPECT_FALSE(block_reduction(t.loop(if_then(t.below(AxisIndex{{{2, t.r}}, 0}, 100), sum))));
  EXPECT_FALSE(block_reduction(t.loop(if_then(t.below(it(t.o), 100), sum))));
  EXPECT_FALSE(block_reduction(t.loop(if_then(t.below(it(t.r), 100, DType::F32), sum))));
  const ScalarRef fractional = apply(Op::Cmplt, DType::I64, {embed_index(it(t.r)), constant(99.5, DType::I64)});
  EXPECT_FALSE(block_reduction(t.loop(if_then(fractional, sum))));
  const ScalarRef huge = apply(Op::Cmplt, DType::I64, {embed_index(it(t.r)), constant(1e300, DType::I64)});
  EXPECT_FALSE(block_reduction(t.loop(if_then(huge, sum))));
  EXPECT_FALSE(block_reduction(t.loop(if_then(apply(Op::Cmpeq, DType::I64, {embed_index(it(t.r)), constant(3, DType::I64)}), sum))));
  // No step: a tree would add a shared slot no thread stored.
  EXPECT_FALSE(block_reduction(For{t.r, 0, 0, sum, AxisType::WorkgroupReduce}));
}

// Strided: serial loops between the threads' loop and the (guarded) accumulation, each thread
// folding its own steps first. Under a guard every thread must have a step at the loops' first
// iterations, or a partial would not exist.
TEST(BlockReduction, StridedStepsEachThreadFoldsBeforeTheTree) {
  const Row t;
  const auto sum = t.store(apply(Op::Add, DType::F32, {t.cell(), t.value()}));
  const Symbol q = fresh_symbol(), q2 = fresh_symbol();
  // The result points into the loop it read (BlockReduction::strided): the loop outlives it.
  const For two_loops = t.loop(for_loop(q, 0, 3, for_loop(q2, 1, 4, sum)));
  const auto strided = block_reduction(two_loops);
  ASSERT_TRUE(strided.has_value());
  ASSERT_EQ(strided->strided.size(), 2u);
  EXPECT_EQ(strided->strided[0]->index, q);
  EXPECT_EQ(strided->strided[1]->index, q2);
  // A split row of 130 in slices of 64: `64 q + r < 130`, every thread's first slice full.
  const auto guarded_loop = [&](std::int64_t offset, std::int64_t bound, Symbol in) {
    return t.loop(for_loop(q, 0, 3, if_then(t.below(AxisIndex{{{64, in}, {1, t.r}}, offset}, bound), sum)));
  };
  const auto guarded = [&](std::int64_t offset, std::int64_t bound, Symbol in) {
    return block_reduction(guarded_loop(offset, bound, in)).has_value();
  };
  const For split_loop = guarded_loop(0, 130, q);
  const auto split_row = block_reduction(split_loop);
  ASSERT_TRUE(split_row.has_value());
  ASSERT_TRUE(split_row->guard.has_value());
  EXPECT_EQ(split_row->guard->before, (AxisIndex{{{64, q}}, 0}));
  // Refused: a thread with no first step (offset 70: threads past 59 have none), a guard over a
  // loop outside the strided ones (its first value unknown), an empty strided loop, a strided
  // loop the cell moves with, a strided loop that is not serial.
  EXPECT_FALSE(guarded(70, 130, q));
  EXPECT_FALSE(guarded(0, 130, t.o));
  EXPECT_FALSE(block_reduction(t.loop(for_loop(q, 2, 2, sum))));
  EXPECT_FALSE(block_reduction(t.loop(for_loop(t.i, 0, 4, sum))));
  EXPECT_FALSE(block_reduction(t.loop(for_loop(q, 0, 3, sum, AxisType::Workgroup))));
}

}  // namespace
}  // namespace cannl::ir
