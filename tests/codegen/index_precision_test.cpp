// The index type of generated code (ir::Target::index_dtype): 32-bit loop counters, rows and
// offsets where the target asks for them, widened index values, and the IndexRangeError that
// replaces a silent overflow when a node or an offset does not fit int32.
#include <gtest/gtest.h>

#include "cannl/codegen/c_codegen.h"
#include "cannl/codegen/gpu_codegen.h"
#include "cannl/support/error.h"

namespace cannl {
namespace {

using namespace cannl::ir;

codegen::CodegenOptions with_index(DType index) {
  codegen::CodegenOptions o;
  o.target.index_dtype = index;
  return o;
}

// out[i] = src[i] over `n` elements.
LoweredRoutine copy_of(const NodeRef& src, const NodeRef& out, std::int64_t n) {
  const Symbol i = fresh_symbol();
  return {"copy", for_loop(i, 0, n, set(out, {AxisIndex::iterator(i)}, get(src, {AxisIndex::iterator(i)}))), {}};
}

TEST(IndexPrecision, Int32CountersRowsAndWidenedIndexValues) {
  auto table = make_node("table", DType::F32, {4, 3});
  auto ids = make_node("ids", DType::F32, {2});
  auto out = make_node("out", DType::F32, {2, 3});
  auto pos = make_node("pos", DType::I64, {2, 3});
  const Symbol i = fresh_symbol();
  const Symbol j = fresh_symbol();
  const std::vector<AxisIndex> ij{AxisIndex::iterator(i), AxisIndex::iterator(j)};
  const auto gather = get_dynamic(table, {AxisIndex::fixed(0), AxisIndex::iterator(j)}, 0, get(ids, {AxisIndex::iterator(i)}));
  const auto flat = embed_index(AxisIndex{{{3, i}, {1, j}}, 0});
  const LoweredRoutine r{"gather", for_loop(i, 0, 2, for_loop(j, 0, 3, seq({set(out, ij, gather), set(pos, ij, flat)}))), {}};

  const std::string narrow = codegen::emit_c(r, {table, ids, out, pos}, with_index(DType::I32)).text;
  EXPECT_NE(narrow.find("for (int32_t i0 = 0; i0 < 2; ++i0)"), std::string::npos) << narrow;
  EXPECT_NE(narrow.find("const int32_t r0 = cannl_dyn_row("), std::string::npos) << narrow;
  // An index *value* is computed in 64 bits whatever the counters are.
  EXPECT_NE(narrow.find("3*((int64_t)i0) + ((int64_t)i1)"), std::string::npos) << narrow;
  EXPECT_EQ(narrow.find("for (int64_t i"), std::string::npos) << narrow;

  const std::string wide = codegen::emit_c(r, {table, ids, out, pos}, with_index(DType::I64)).text;
  EXPECT_NE(wide.find("for (int64_t i0 = 0; i0 < 2; ++i0)"), std::string::npos) << wide;
  EXPECT_NE(wide.find("const int64_t r0 = cannl_dyn_row("), std::string::npos) << wide;
  EXPECT_EQ(wide.find("int32_t i"), std::string::npos) << wide;
}

TEST(IndexPrecision, CpuTargetsKeep64BitAndGpuTargets32BitIndices) {
  EXPECT_EQ(cpu_target(0).index_dtype, DType::I64);
  EXPECT_EQ(cpu_target(32).index_dtype, DType::I64);
  EXPECT_EQ(generic_gpu_target({1024, {1024, 1024, 64}, {2147483647, 65535, 65535}, 49152, 32}).index_dtype, DType::I32);
}

TEST(IndexPrecision, ANodeOf2To31ElementsIsAnIndexRangeErrorNamingIt) {
  auto big = make_node("huge_embedding", DType::F32, {1LL << 31});  // never allocated
  auto out = make_node("out", DType::F32, {4});
  const LoweredRoutine r = copy_of(big, out, 4);
  try {
    codegen::emit_c(r, {big, out}, with_index(DType::I32));
    FAIL() << "expected IndexRangeError";
  } catch (const IndexRangeError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("huge_embedding"), std::string::npos) << m;
    EXPECT_NE(m.find("2147483648 elements"), std::string::npos) << m;
    EXPECT_NE(m.find("large_models=true"), std::string::npos) << m;
  }
  // 64-bit indices print it (the cc target's default).
  EXPECT_NO_THROW(codegen::emit_c(r, {big, out}, with_index(DType::I64)));
  // The largest node int32 addresses is fine.
  auto largest = make_node("largest", DType::F32, {2147483647});
  EXPECT_NO_THROW(codegen::emit_c(copy_of(largest, out, 4), {largest, out}, with_index(DType::I32)));
}

TEST(IndexPrecision, AnOffsetWhosePartialSumsLeaveInt32IsAnError) {
  // Each node fits, but 70000 * i0 over i0 < 40000 passes 2^31 on the way (a guarded access
  // of a padded loop may compute such an offset before its guard discards it).
  auto src = make_node("src", DType::F32, {40000, 70000});
  auto out = make_node("out", DType::F32, {40000});
  const Symbol i = fresh_symbol();
  const LoweredRoutine r{"rows", for_loop(i, 0, 40000, set(out, {AxisIndex::iterator(i)},
                                                            get(src, {AxisIndex::iterator(i), AxisIndex::fixed(0)}))), {}};
  // src itself has 2.8e9 elements: the node check fires first.
  EXPECT_THROW(codegen::emit_c(r, {src, out}, with_index(DType::I32)), IndexRangeError);

  auto small = make_node("small", DType::F32, {8});
  const Symbol k = fresh_symbol();
  const LoweredRoutine scaled{
      "scaled", for_loop(k, 0, 40000, set(out, {AxisIndex::iterator(k)}, get(small, {AxisIndex{{{70000, k}}, -5}}))), {}};
  try {
    codegen::emit_c(scaled, {small, out}, with_index(DType::I32));
    FAIL() << "expected IndexRangeError";
  } catch (const IndexRangeError& e) {
    EXPECT_NE(std::string(e.what()).find("offset into node small"), std::string::npos) << e.what();
  }
  EXPECT_NO_THROW(codegen::emit_c(scaled, {small, out}, with_index(DType::I64)));
}

TEST(IndexPrecision, ALoopBeyondInt32IsAnError) {
  auto one = make_node("one", DType::F32, {1});
  const Symbol i = fresh_symbol();
  const LoweredRoutine r{"long_loop", for_loop(i, 0, 3000000000LL, set(one, {AxisIndex::fixed(0)}, constant(1, DType::F32))), {}};
  EXPECT_THROW(codegen::emit_c(r, {one}, with_index(DType::I32)), IndexRangeError);
  EXPECT_NO_THROW(codegen::emit_c(r, {one}, with_index(DType::I64)));
}

TEST(IndexPrecision, GpuKernelsSpellTheTargetsIndexType) {
  auto src = make_node("src", DType::F32, {8});
  auto out = make_node("out", DType::F32, {8});
  const LoweredRoutine r = copy_of(src, out, 8);
  codegen::CodegenOptions o;
  o.target = generic_gpu_target({1024, {1024, 1024, 64}, {2147483647, 65535, 65535}, 49152, 32});
  const auto module = codegen::emit_gpu(codegen::GpuLanguage::Cuda, r, {{r.body, {}}}, o);
  EXPECT_NE(module.text.find("for (int32_t i0 = 0; i0 < 8; ++i0)"), std::string::npos) << module.text;
  auto big = make_node("big", DType::F32, {1LL << 31});
  const LoweredRoutine too_big = copy_of(big, out, 8);
  EXPECT_THROW(codegen::emit_gpu(codegen::GpuLanguage::Cuda, too_big, {{too_big.body, {}}}, o), IndexRangeError);
}

}  // namespace
}  // namespace cannl
