// Golden IR snapshots of every optimizer pass (tests/golden/opt/<case>/<NN>-<pass>.ll): the
// decisions (by label) and the loop IR after each pass, statement comments stripped (they carry
// process-global symbol ids). A change of any pass output fails here; when the change is
// intended, regenerate and review the diff:
//
//   CANNL_TEST_UPDATE_GOLDEN=1 ./test_opt --gtest_filter='Golden.*'
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "cannl/ir/assignments.h"
#include "cannl/ir/lower.h"
#include "cannl/opt/optimize.h"
#include "runtime/test_util.h"

namespace cannl::opt {
namespace {

using ir::Op;
using ir::Operand;

std::string text_of(const ir::LoweredRoutine& r, const std::map<int, Decision>& decisions,
                    const std::vector<ir::NodeRef>& nodes) {
  std::ostringstream out;
  for (const auto& n : nodes)
    if (decisions.contains(n->id)) out << "# " << n->label << ": " << describe_decision(decisions.at(n->id)) << "\n";
  static const std::regex trailing("   # [^\n]*");
  out << std::regex_replace(ir::print_loop_ir(r), trailing, "");
  return out.str();
}

void check_golden(const std::string& name, const ir::Comp& comp, const std::vector<ir::NodeRef>& nodes) {
  PassContext ctx;
  ctx.record_passes = true;
  const auto o = optimize(ir::lower(comp, name), ctx, true);
  const std::filesystem::path dir = std::filesystem::path(CANNL_SOURCE_DIR) / "tests/golden/opt" / name;
  const bool update = std::getenv("CANNL_TEST_UPDATE_GOLDEN") != nullptr;
  if (update) std::filesystem::create_directories(dir);
  for (std::size_t k = 0; k < o.passes.size(); ++k) {
    char file[64];
    std::snprintf(file, sizeof file, "%02zu-%s.ll", k + 1, o.passes[k].first.c_str());
    const std::string got = text_of(o.passes[k].second, o.decisions, nodes);
    if (update) {
      std::ofstream(dir / file) << got;
      continue;
    }
    std::ifstream in(dir / file);
    ASSERT_TRUE(in) << (dir / file) << " is missing; run with CANNL_TEST_UPDATE_GOLDEN=1";
    std::stringstream want;
    want << in.rdbuf();
    EXPECT_EQ(got, want.str()) << "pass " << o.passes[k].first << " of " << name
                               << " changed; if intended, rerun with CANNL_TEST_UPDATE_GOLDEN=1";
  }
}

ir::AccumOp accum(ir::NodeRef lhs, Op acc, Op op, std::vector<Operand> args, ir::Projections p) {
  ir::AccumOp a;
  a.lhs = std::move(lhs);
  a.accum = acc;
  a.initialize_neutral = true;
  a.op = op;
  a.args = std::move(args);
  a.projections = std::move(p);
  return a;
}

ir::NodeRef node(const std::string& label, std::vector<std::int64_t> dims, bool materialized) {
  auto n = ir::make_node(label, ir::DType::F32, std::move(dims));
  if (materialized) ir::update_memory_mode(*n, ir::MemoryMode::Materialized, 900);
  return n;
}

// A dense layer: h = relu(w * x + b) with the matmul inlined into the bias add.
TEST(Golden, DenseLayer) {
  auto w = node("w", {3, 2}, true), x = node("x", {2, 4}, true), b = node("b", {3, 4}, true);
  auto m = node("m", {3, 4}, false), z = node("z", {3, 4}, false), h = node("h", {3, 4}, true);
  auto comp = cannl::testing::accum_sequence(
      {accum(m, Op::Add, Op::Mul, {Operand::of(w), Operand::of(x)}, cannl::testing::matmul_projections(3, 2, 4)),
       accum(z, Op::Arg2, Op::Add, {Operand::of(m), Operand::of(b)}, cannl::testing::pointwise_projections({3, 4}, 2)),
       accum(h, Op::Arg2, Op::Relu, {Operand::of(z)}, cannl::testing::pointwise_projections({3, 4}, 1))});
  check_golden("dense_layer", comp, {w, x, b, m, z, h});
}

// A pointwise chain with a doubly-read node: stored locally (visit cap) while the rest inlines.
TEST(Golden, PointwiseChain) {
  auto a = node("a", {4}, true), c = node("c", {4}, false), d = node("d", {4}, false);
  auto e = node("e", {4}, true);
  auto p = [] (int n) { return cannl::testing::pointwise_projections({4}, n); };
  auto comp = cannl::testing::accum_sequence(
      {accum(c, Op::Arg2, Op::Neg, {Operand::of(a)}, p(1)),
       accum(d, Op::Arg2, Op::Mul, {Operand::of(c), Operand::of(a)}, p(2)),
       accum(e, Op::Arg2, Op::Add, {Operand::of(d), Operand::of(d)}, p(2))});
  check_golden("pointwise_chain", comp, {a, c, d, e});
}

}  // namespace
}  // namespace cannl::opt
