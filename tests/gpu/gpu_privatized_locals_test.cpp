// A privatized accumulator on a GPU: every thread of the block keeps its own copy of the local,
// so the loop setting it, the later parts of a Partition of that loop and the statements
// reading it after the loop run in one kernel of one block (schedule/fission.cpp), and every
// thread that reads the local must have run every statement setting it (schedule/local_reach.h).
// The results must be the interpreter's, which keeps one local.
#include <gtest/gtest.h>

#include "gpu/gpu_test_util.h"
#include "schedule/schedule_test_util.h"

namespace cannl {
namespace {

using ir::AxisIndex;
using ir::AxisType;
using ir::DType;
using schedule::testing::it;

struct Partitioned {
  ir::NodeRef x = ir::make_node("x", DType::F32, {4, 3});
  ir::NodeRef w = ir::make_node("w", DType::F32, {8});
  ir::NodeRef tile = ir::make_node("tile", DType::F32, {3});
  ir::NodeRef z = ir::make_node("z", DType::F32, {8});
  ir::NodeRef t = ir::make_node("t", DType::F32, {1});
  int v = ir::fresh_scope_id();

  // for i in [begin, end): { for j Workgroup: tile[j] = x[i, j]; barrier; v := v + tile[2] * tile[0]; barrier }
  ir::StmtRef part(std::int64_t begin, std::int64_t end) const {
    const ir::Symbol i = ir::fresh_symbol(), j = ir::fresh_symbol();
    const auto stage = ir::for_loop(j, 0, 3, ir::set(tile, {it(j)}, ir::get(x, {it(i), it(j)})), AxisType::Workgroup);
    const auto product = ir::apply(ir::Op::Mul, DType::F32,
                                   {ir::get(tile, {AxisIndex::fixed(2)}), ir::get(tile, {AxisIndex::fixed(0)})});
    const auto add = ir::apply(ir::Op::Add, DType::F32, {ir::get_local(v, DType::F32), product});
    return ir::for_loop(i, begin, end, ir::seq({stage, ir::barrier(), ir::set_local(v, add), ir::barrier()}));
  }
  // v := t[0]; both parts; for k in [0, 8) Workgroup: z[k] = v * w[k]; t[0] = v
  backends::CompileRequest request() const {
    const ir::Symbol k = ir::fresh_symbol();
    const auto zero = AxisIndex::fixed(0);
    const auto scaled = ir::apply(ir::Op::Mul, DType::F32, {ir::get_local(v, DType::F32), ir::get(w, {it(k)})});
    const auto body = ir::seq({ir::declare_local(v, DType::F32, false), ir::set_local(v, ir::get(t, {zero})),
                               part(0, 2), part(2, 4),
                               ir::for_loop(k, 0, 8, ir::set(z, {it(k)}, scaled), AxisType::Workgroup),
                               ir::set(t, {zero}, ir::get_local(v, DType::F32))});
    return {{"partitioned_accumulator", body, {}}, {x, w, tile, z, t}};
  }
};

TEST(GpuPrivatizedLocals, PartsOfAnAccumulatorAndItsReadersOnEveryThreadAgreeWithTheInterpreter) {
  auto gpu = gpu_test::backend();
  if (!gpu) GTEST_SKIP() << gpu_test::unavailable_reason();
  std::vector<float> x(12), w(8);
  for (std::size_t c = 0; c < x.size(); ++c) x[c] = 0.25f * static_cast<float>(c) - 1.0f;
  for (std::size_t c = 0; c < w.size(); ++c) w[c] = 1.0f + 0.5f * static_cast<float>(c);
  const std::vector<test_util::Bytes> inputs{test_util::bytes_of(x), test_util::bytes_of(w),
                                             test_util::bytes_of(std::vector<float>(3)),
                                             test_util::bytes_of(std::vector<float>(8)),
                                             test_util::bytes_of(std::vector<float>{1.5f})};
  const std::string source = gpu_test::expect_as_on_the_interpreter(*gpu, Partitioned{}.request(), inputs, 2);
  EXPECT_NE(source.find(gpu_test::spelling().barrier), std::string::npos) << source;
}

}  // namespace
}  // namespace cannl
