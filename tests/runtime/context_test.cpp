// Context behaviour: initialization checks, execution dependencies, static indices, host
// transfers for every dtype, and compiler failures surfacing as CompileError.
#include "cannl/runtime/context.h"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <string>

#include "cannl/support/config.h"
#include "cannl/support/error.h"
#include "cannl/support/files.h"
#include "runtime/test_util.h"

namespace cannl::testing {
namespace {

using ir::DType;
using ir::Op;
using runtime::Context;

/// Expects `statement` to throw `Error` whose message contains every one of `parts`.
#define EXPECT_THROW_WITH(statement, Error, ...)                                         \
  do {                                                                                   \
    try {                                                                                \
      statement;                                                                         \
      ADD_FAILURE() << "expected " #Error " from " #statement;                           \
    } catch (const Error& e) {                                                           \
      for (const std::string part : {__VA_ARGS__})                                       \
        EXPECT_NE(std::string(e.what()).find(part), std::string::npos)                   \
            << "message lacks '" << part << "': " << e.what();                           \
    }                                                                                    \
  } while (0)

/// lhs := op(args...) pointwise over lhs's dims.
TEST(ContextTest, RunningWithAnUnuploadedInputNamesNodeAndRoutine) {
  auto ctx = Context::interpreter();
  auto x = ir::make_node("x", DType::F32, {64, 2});
  auto y = ir::make_node("y", DType::F32, {64, 2});
  auto step = ctx.compile(single_accum(pointwise(y, Op::Add, {of(x), ir::Operand::literal(1)})),
                          "step");
  ASSERT_EQ(step.inputs().size(), 1u);
  EXPECT_THROW_WITH(ctx.run(step), UninitializedError, "routine 'step' reads node 'x'",
                    "f32 [64,2]", "set_values");
  EXPECT_THROW_WITH(ctx.get_values(y), UninitializedError, "'y'", "never written");
}

TEST(ContextTest, SetValuesChecksTheSize) {
  auto ctx = Context::interpreter();
  auto x = ir::make_node("x", DType::F32, {2, 3});
  const std::vector<double> three = {1, 2, 3};
  EXPECT_THROW_WITH(ctx.set_values(x, three), RuntimeUsageError, "'x'", "got 3 values", "6");
  const std::vector<std::byte> bytes(5);
  EXPECT_THROW_WITH(ctx.set_bytes(x, bytes), RuntimeUsageError, "got 5 bytes", "24 bytes");
  EXPECT_FALSE(ctx.is_initialized(x));
}

TEST(ContextTest, GetValuesOfANodeWithoutBufferIsAUsageError) {
  auto ctx = Context::interpreter();
  auto x = ir::make_node("lonely", DType::F32, {3});
  EXPECT_FALSE(ctx.has_buffer(x));
  EXPECT_THROW_WITH(ctx.get_values(x), RuntimeUsageError, "'lonely'", "has no buffer");
  EXPECT_THROW_WITH(ctx.get_value(x, 0), RuntimeUsageError, "has no buffer");
}

TEST(ContextTest, ReaderRoutineRequiresItsWriterToHaveRunOrItsInputGiven) {
  auto ctx = Context::interpreter();
  auto x = ir::make_node("x", DType::F32, {4});
  auto y = ir::make_node("y", DType::F32, {4});
  auto z = ir::make_node("z", DType::F32, {4});
  auto a = ctx.compile(single_accum(pointwise(y, Op::Mul, {of(x), ir::Operand::literal(2)})), "A");
  auto b = ctx.compile(single_accum(pointwise(z, Op::Add, {of(y), ir::Operand::literal(1)})), "B");
  ctx.set_values(x, std::vector<double>{1, 2, 3, 4});
  EXPECT_THROW_WITH(ctx.run(b), UninitializedError, "routine 'B' reads node 'y'",
                    "routine 'A' writes it but has not run yet");
  // y given from outside (an upload, a restored checkpoint): B reads what it was given.
  ctx.set_values(y, std::vector<double>{0, 0, 0, 0});
  ctx.run(b);
  EXPECT_EQ(ctx.get_values(z), (std::vector<double>{1, 1, 1, 1}));
  ctx.run(a);
  ctx.run(b);
  EXPECT_EQ(ctx.get_values(z), (std::vector<double>{3, 5, 7, 9}));
}

// Once a routine wrote y again, the value is the routines' own: a reader compiled after a second
// writer needs that writer to have run, whatever was uploaded before.
TEST(ContextTest, AnUploadSatisfiesAReaderOnlyUntilARoutineWritesTheNodeAgain) {
  auto ctx = Context::interpreter();
  auto x = ir::make_node("x", DType::F32, {4});
  auto y = ir::make_node("y", DType::F32, {4});
  auto z = ir::make_node("z", DType::F32, {4});
  auto a = ctx.compile(single_accum(pointwise(y, Op::Mul, {of(x), ir::Operand::literal(2)})), "A");
  auto a2 = ctx.compile(single_accum(pointwise(y, Op::Mul, {of(x), ir::Operand::literal(3)})), "A2");
  auto b = ctx.compile(single_accum(pointwise(z, Op::Add, {of(y), ir::Operand::literal(1)})), "B");
  ctx.set_values(x, std::vector<double>{1, 2, 3, 4});
  ctx.set_values(y, std::vector<double>{0, 0, 0, 0});
  EXPECT_THROW_WITH(ctx.run(a2), RuntimeUsageError, "'A2' depends on routine 'A'");  // write after write
  ctx.run(a);
  EXPECT_THROW_WITH(ctx.run(b), RuntimeUsageError, "routine 'B' depends on routine 'A2'", "'y'");
}

TEST(ContextTest, WriterAfterReaderRequiresTheReaderToHaveRun) {
  auto ctx = Context::interpreter();
  auto p = ir::make_node("p", DType::F32, {2});
  auto q = ir::make_node("q", DType::F32, {2});
  auto read_p = ctx.compile(single_accum(pointwise(q, Op::Neg, {of(p)})), "read_p");
  auto write_p = ctx.compile(single_accum(pointwise(p, Op::Identity, {ir::Operand::literal(5)})),
                             "write_p");
  EXPECT_THROW_WITH(ctx.run(write_p), RuntimeUsageError, "'write_p' depends on routine 'read_p'",
                    "'p'");
  ctx.set_values(p, std::vector<double>{1, 2});
  ctx.run(read_p);
  ctx.run(write_p);
  EXPECT_EQ(ctx.get_values(q), (std::vector<double>{-1, -2}));
  EXPECT_EQ(ctx.get_values(p), (std::vector<double>{5, 5}));
}

/// Gradient of sum((w*x - t)^2)/2 w.r.t. w is (w*x - t)*x; the update is w -= 0.1 * grad.
void gradient_descent_alternates(Context ctx) {
  auto w = ir::make_node("w", DType::F32, {3});
  auto x = ir::make_node("x", DType::F32, {3});
  auto t = ir::make_node("t", DType::F32, {3});
  auto e = ir::make_node("e", DType::F32, {3});
  auto g = ir::make_node("grad_w", DType::F32, {3});
  auto grad = ctx.compile(accum_sequence({pointwise(e, Op::Mul, {of(w), of(x)}),
                                          pointwise(e, Op::Sub, {of(e), of(t)}),
                                          pointwise(g, Op::Mul, {of(e), of(x)})}),
                          "grad");
  ir::AccumOp step = pointwise(w, Op::Mul, {of(g), ir::Operand::literal(0.1)});
  step.accum = Op::Sub;
  auto update = ctx.compile(single_accum(step), "update");
  EXPECT_THROW_WITH(ctx.run(update), UninitializedError, "'grad_w'");
  std::vector<float> hw = {0.5f, -1.0f, 2.0f}, hx = {1.0f, 2.0f, -0.5f}, ht = {2.0f, 1.0f, 0.25f};
  ctx.set_values(w, std::vector<double>(hw.begin(), hw.end()));
  ctx.set_values(x, std::vector<double>(hx.begin(), hx.end()));
  ctx.set_values(t, std::vector<double>(ht.begin(), ht.end()));
  for (int iteration = 0; iteration < 5; ++iteration) {
    ctx.run(grad);
    ctx.run(update);
    for (std::size_t k = 0; k < 3; ++k) {
      const float gk = (hw[k] * hx[k] - ht[k]) * hx[k];
      hw[k] = hw[k] - gk * 0.1f;
    }
    const auto got = ctx.get_values(w);
    for (std::size_t k = 0; k < 3; ++k) EXPECT_FLOAT_EQ(got[k], hw[k]) << "iteration " << iteration;
  }
}

TEST(ContextTest, GradientAndUpdateShareParametersOnTheInterpreter) {
  gradient_descent_alternates(Context::interpreter());
}

TEST(ContextTest, GradientAndUpdateShareParametersOnTheCBackend) {
  gradient_descent_alternates(Context::cpu());
}

TEST(ContextTest, StaticIndexIsRangeChecked) {
  auto ctx = Context::interpreter();
  auto data = ir::make_node("data", DType::F32, {4, 3});
  auto row = ir::make_node("row", DType::F32, {3});
  const ir::StaticSymbol batch{ir::fresh_symbol(), 4, "batch"};
  ir::AccumOp copy = pointwise(row, Op::Identity, {of(data)});
  copy.projections.rhs_dims = {{4, 3}};
  copy.projections.project_rhs[0].insert(copy.projections.project_rhs[0].begin(),
                                          ir::AxisIndex{{{1, batch.symbol}}, 0});
  ir::Comp comp = single_accum(copy);
  comp.statics = {batch};
  auto routine = ctx.compile(comp, "take_row");
  ASSERT_EQ(routine.statics().size(), 1u);
  ctx.set_values(data, std::vector<double>{0, 1, 2, 10, 11, 12, 20, 21, 22, 30, 31, 32});
  const std::int64_t bad[] = {4}, negative[] = {-1}, good[] = {2};
  EXPECT_THROW_WITH(ctx.run(routine, bad), RuntimeUsageError, "'batch' = 4", "[0, 4)");
  EXPECT_THROW_WITH(ctx.run(routine, negative), RuntimeUsageError, "'batch' = -1");
  EXPECT_THROW_WITH(ctx.run(routine), RuntimeUsageError, "takes 1 static", "0 were given");
  ctx.run(routine, good);
  EXPECT_EQ(ctx.get_values(row), (std::vector<double>{20, 21, 22}));
}

/// Values every dtype stores exactly (fp8 E5M2 has two mantissa bits; u8 holds at most 255).
TEST(ContextTest, SetValuesRoundTripsInEveryDtype) {
  auto ctx = Context::interpreter();
  const std::vector<double> values = {0, 1, 2, 7, 96, 0.5, -3};
  for (DType dtype : ir::kAllDTypes) {
    auto node = ir::make_node("v", dtype, {7});
    ctx.set_values(node, values);
    auto expected = values;
    if (!ir::is_float(dtype)) expected[5] = 0;             // truncation toward zero
    if (ir::is_unsigned_int(dtype)) expected[6] = 0;  // saturates at 0
    // u4x32 stores the int64 -3 as words {2^32-3, 2^32-1, 0, 0}; loading reads the low 64 bits.
    if (dtype == DType::U4x32) expected[6] = static_cast<double>(~std::uint64_t{2});
    EXPECT_EQ(ctx.get_values(node), expected) << ir::dtype_name(dtype);
    EXPECT_EQ(ctx.get_bytes(node).size(), 7 * ir::dtype_bytes(dtype)) << ir::dtype_name(dtype);
  }
}

TEST(ContextTest, SetBytesRoundTripsInEveryDtype) {
  auto ctx = Context::interpreter();
  for (DType dtype : ir::kAllDTypes) {
    auto node = ir::make_node("b", dtype, {2, 3});
    std::vector<std::byte> bytes(6 * ir::dtype_bytes(dtype));
    for (std::size_t k = 0; k < bytes.size(); ++k) bytes[k] = std::byte(k * 37 + 11);
    ctx.set_bytes(node, bytes);
    EXPECT_EQ(ctx.get_bytes(node), bytes) << ir::dtype_name(dtype);
  }
}

TEST(ContextTest, U4x32ValuesUseTheLowWords) {
  auto ctx = Context::interpreter();
  auto node = ir::make_node("key", DType::U4x32, {1});
  ctx.set_values(node, std::vector<double>{5});
  const auto bytes = ctx.get_bytes(node);
  std::uint32_t words[4];
  std::memcpy(words, bytes.data(), sizeof(words));
  EXPECT_EQ(words[0], 5u);
  EXPECT_EQ(words[1] + words[2] + words[3], 0u);
}

TEST(ContextTest, PaddedNodesTransferOnlyTheirInterior) {
  auto ctx = Context::interpreter();
  auto node = ir::make_node("padded", DType::F32, {4, 5});
  node->padding = {{1, 1}, {1, 2}};
  EXPECT_THROW_WITH(ctx.set_values(node, std::vector<double>(20, 1.0)), RuntimeUsageError,
                    "got 20 values", "4 logical elements");
  ctx.set_values(node, std::vector<double>{1, 2, 3, 4});
  EXPECT_EQ(ctx.get_values(node), (std::vector<double>{1, 2, 3, 4}));
  EXPECT_EQ(ctx.get_bytes(node).size(), 16u);
  EXPECT_EQ(ctx.get_value(node, 3), 4);
  EXPECT_THROW_WITH(ctx.get_value(node, 4), RuntimeUsageError, "index 4 is out of range");
}

TEST(ContextTest, HostStorageIsTheBufferInPlace) {
  auto ctx = Context::interpreter();
  auto node = ir::make_node("cells", DType::F32, {3});
  EXPECT_THROW_WITH(ctx.host_storage(node), RuntimeUsageError, "host_storage", "no buffer");
  ctx.set_values(node, std::vector<double>{1, 2, 3});
  std::span<std::byte> cells = ctx.host_storage(node);
  ASSERT_EQ(cells.size(), 12u);
  const float written = 7.5f;
  std::memcpy(cells.data() + 4, &written, sizeof(written));  // what a NumPy view's write does
  EXPECT_EQ(ctx.get_values(node), (std::vector<double>{1, 7.5, 3}));
  EXPECT_EQ(ctx.host_storage(node).data(), cells.data());
  auto padded = ir::make_node("padded", DType::F32, {4});
  padded->padding = {{1, 1}};
  ctx.set_values(padded, std::vector<double>{1, 2});
  EXPECT_TRUE(ctx.host_storage(padded).empty());  // margins: only copies see the interior
}

TEST(ContextTest, WeakContextLocksOnlyWhileAHandleLives) {
  auto node = ir::make_node("kept", DType::F32, {1});
  runtime::WeakContext weak;
  {
    auto ctx = Context::interpreter();
    ctx.set_values(node, std::vector<double>{4});
    weak = runtime::WeakContext(ctx);
    auto alive = weak.lock();
    ASSERT_TRUE(alive.has_value());
    EXPECT_EQ(alive->get_values(node), (std::vector<double>{4}));
  }
  EXPECT_FALSE(weak.lock().has_value());
}

TEST(ContextTest, HostInitDataIsUploadedAtLink) {
  auto ctx = Context::interpreter();
  auto c = ir::make_node("c", DType::F32, {2});
  const float literal[2] = {1.5f, -2.0f};
  auto bytes = std::make_shared<std::vector<std::byte>>(sizeof(literal));
  std::memcpy(bytes->data(), literal, sizeof(literal));
  c->host_init = bytes;
  auto y = ir::make_node("y", DType::F32, {2});
  auto routine = ctx.compile(single_accum(pointwise(y, Op::Add, {of(c), of(c)})), "double_c");
  EXPECT_TRUE(ctx.is_initialized(c));
  ctx.run(routine);
  EXPECT_EQ(ctx.get_values(y), (std::vector<double>{3, -4}));
}

TEST(ContextTest, RoutinesRunOnlyInTheirOwnContext) {
  auto first = Context::interpreter();
  auto second = Context::interpreter();
  auto x = ir::make_node("x", DType::F32, {2});
  auto routine = first.compile(single_accum(pointwise(x, Op::Identity, {ir::Operand::literal(1)})),
                               "fill x");
  EXPECT_EQ(routine.name(), "fill_x");
  EXPECT_THROW_WITH(second.run(routine), RuntimeUsageError, "'fill_x'", "different context");
  first.run(routine);
  EXPECT_EQ(first.get_values(x), (std::vector<double>{1, 1}));
}

TEST(ContextTest, FromConfigPicksTheBackendOrListsValidValues) {
  config::set_override("backend", "interpreter");
  auto interp_ctx = Context::from_config();
  auto cpu_name = std::string(Context::cpu().backend_name());
  EXPECT_NE(std::string(interp_ctx.backend_name()), cpu_name);
  config::set_override("backend", "quantum");
  EXPECT_THROW_WITH(Context::from_config(), ConfigError, "quantum", "cc, interpreter");
  config::clear_overrides();
}

TEST(ContextTest, FailingCCompilerSurfacesAsCompileError) {
  config::set_override("cc_extra_flags", "-fno-such-flag-xyz");
  try {
    auto ctx = Context::cpu();
    auto x = ir::make_node("x", DType::F32, {2});
    EXPECT_THROW_WITH(
        ctx.compile(single_accum(pointwise(x, Op::Identity, {ir::Operand::literal(1)})), "bad"),
        CompileError, "no-such-flag-xyz");
  } catch (...) {
    config::clear_overrides();
    throw;
  }
  config::clear_overrides();
}

/// A node whose values come with it (a literal, loaded weights): uploaded when a routine links it.
ir::NodeRef host_init_node(const std::string& name, std::vector<float> values) {
  auto node = ir::make_node(name, DType::F32, {static_cast<std::int64_t>(values.size())});
  auto bytes = std::make_shared<std::vector<std::byte>>(values.size() * sizeof(float));
  std::memcpy(bytes->data(), values.data(), bytes->size());
  node->host_init = bytes;
  return node;
}

// Linking allocates buffers and uploads host-init data one node after another: the budget stops
// it at the big node, after the others were linked. The failed compile must take them back.
TEST(ContextTest, ACompileFailingWhileLinkingLeavesNoBuffersOrMarks) {
  config::set_override("memory_budget_mb", "1");
  auto ctx = Context::cpu();
  auto c = host_init_node("c", {1.5f, -2.0f});
  auto small = ir::make_node("small", DType::F32, {2});
  auto big = ir::make_node("big", DType::F32, {1 << 19});  // 2 MiB, over the budget alone
  auto fill_big = pointwise(big, Op::Identity, {ir::Operand::literal(1)});
  try {
    EXPECT_THROW_WITH(ctx.compile(accum_sequence({pointwise(small, Op::Add, {of(c), of(c)}), fill_big}), "both"),
                      RuntimeUsageError, "'big'", "memory budget");
  } catch (...) {
    config::clear_overrides();
    throw;
  }
  config::clear_overrides();
  for (const auto& node : {c, small, big}) {
    EXPECT_FALSE(ctx.has_buffer(node)) << node->debug_name();
    EXPECT_FALSE(ctx.is_initialized(node)) << node->debug_name();
  }
  // The corrected computation links from scratch: c is uploaded again and the routine runs.
  auto routine = ctx.compile(single_accum(pointwise(small, Op::Add, {of(c), of(c)})), "small_only");
  EXPECT_TRUE(ctx.is_initialized(c));
  ctx.run(routine);
  EXPECT_EQ(ctx.get_values(small), (std::vector<double>{3, -4}));
}

TEST(ContextTest, DebugLevelTwoDumpsAssignmentsAndLoopIr) {
  config::set_override("debug", "2");
  auto ctx = Context::interpreter();
  auto x = ir::make_node("x", DType::F32, {2});
  ctx.compile(single_accum(pointwise(x, Op::Identity, {ir::Operand::literal(1)})), "dumped");
  config::clear_overrides();
  const auto dir = files::build_dir();
  EXPECT_TRUE(std::filesystem::exists(dir / "dumped.cd"));
  EXPECT_TRUE(std::filesystem::exists(dir / "dumped.ll"));
}

}  // namespace
}  // namespace cannl::testing
