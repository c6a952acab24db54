// Context::run (src/runtime/run.cpp): what a run leaves behind when its executable throws.
#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <stdexcept>
#include <vector>

#include "cannl/backends/backend.h"
#include "cannl/runtime/context.h"
#include "cannl/support/error.h"
#include "runtime/async_failure_backend.h"
#include "runtime/test_util.h"

namespace cannl::testing {
namespace {

using ir::DType;
using ir::Op;
using runtime::Context;

/// The interpreter, except that a run throws after its routine wrote its outputs once `fail` is
/// set: a routine whose later kernel fails (a race found by a checker, a device fault) after the
/// earlier ones wrote.
class FailAfterRunBackend : public backends::Backend {
 public:
  bool fail = false;

  std::string_view name() const override { return inner_->name(); }
  ir::Target target() const override { return inner_->target(); }
  std::unique_ptr<backends::Buffer> allocate(std::size_t bytes) override { return inner_->allocate(bytes); }
  std::unique_ptr<backends::Executable> compile(const backends::CompileRequest& request) override {
    return std::make_unique<Exe>(inner_->compile(request), fail);
  }

 private:
  struct Exe : backends::Executable {
    Exe(std::unique_ptr<backends::Executable> inner, const bool& fail) : inner(std::move(inner)), fail(fail) {}
    void run(std::span<backends::Buffer* const> buffers, std::span<const std::int64_t> statics) override {
      inner->run(buffers, statics);
      if (fail) throw RuntimeError("injected failure after the routine wrote");
    }
    const std::string& source() const override { return inner->source(); }
    const ir::LoweredRoutine& routine() const override { return inner->routine(); }
    std::unique_ptr<backends::Executable> inner;
    const bool& fail;
  };
  std::shared_ptr<backends::Backend> inner_ = backends::make_interpreter_backend();
};

// w := w + 1 in place. A run that throws after (part of) its work wrote w leaves w neither the
// old value nor the new one the caller saw succeed: reading it, or running a routine that reads
// it, must be an UninitializedError, not silently the half-updated value (as a failed queued run
// already is, ContextState::wait_for_device).
TEST(RunTest, ARunThatThrowsLeavesItsOutputsUninitializedNotStale) {
  auto backend = std::make_shared<FailAfterRunBackend>();
  Context ctx(backend);
  auto w = ir::make_node("w", DType::F32, {2});
  auto y = ir::make_node("y", DType::F32, {2});
  auto step = ctx.compile(single_accum(pointwise(w, Op::Add, {of(w), ir::Operand::literal(1)})), "step");
  auto read = ctx.compile(single_accum(pointwise(y, Op::Identity, {of(w)})), "read");
  ctx.set_values(w, std::vector<double>{1, 2});
  ctx.run(step);
  ctx.run(read);
  EXPECT_EQ(ctx.get_values(w), (std::vector<double>{2, 3}));
  backend->fail = true;
  EXPECT_THROW(ctx.run(step), RuntimeError);
  backend->fail = false;
  EXPECT_FALSE(ctx.is_initialized(w));
  // The messages say that w lost its value, not that it was never written.
  for (const auto& attempt : std::vector<std::function<void()>>{[&] { ctx.get_values(w); }, [&] { ctx.run(read); }}) {
    try {
      attempt();
      ADD_FAILURE() << "expected UninitializedError";
    } catch (const UninitializedError& e) {
      EXPECT_NE(std::string(e.what()).find("'w'"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("lost its value: the run, copy or device average writing it failed"),
                std::string::npos) << e.what();
    }
  }
  // A new upload makes it usable again.
  ctx.set_values(w, std::vector<double>{5, 6});
  ctx.run(step);
  ctx.run(read);
  EXPECT_EQ(ctx.get_values(y), (std::vector<double>{6, 7}));
}

// On a GPU backend (no worker queue: the device's stream is the queue) a run returns before its
// kernels ran, and their failure surfaces at the next wait. The nodes written since the last wait
// that succeeded hold nothing they were said to hold: after the failure they are uninitialized,
// as after a failed queued run of the CPU devices (ContextState::wait_for_device).
TEST(RunTest, AnAsynchronousFailureReportedBySynchronizeLeavesTheOutputsUninitialized) {
  auto backend = std::make_shared<AsyncFailureBackend>();
  Context ctx(backend);
  auto w = ir::make_node("w", DType::F32, {2});
  auto x = ir::make_node("x", DType::F32, {2});
  auto step = ctx.compile(single_accum(pointwise(w, Op::Add, {of(w), of(x)})), "step");
  ctx.set_values(w, std::vector<double>{1, 2});
  ctx.set_values(x, std::vector<double>{1, 1});
  ctx.run(step);
  ctx.synchronize();
  ctx.set_values(x, std::vector<double>{2, 2});
  ctx.run(step);
  backend->failed = true;
  EXPECT_THROW(ctx.synchronize(), RuntimeError);
  EXPECT_FALSE(ctx.is_initialized(w));
  EXPECT_THROW(ctx.get_values(w), UninitializedError);
  // An upload is complete when it returns: no failure of later work takes its value.
  EXPECT_EQ(ctx.get_values(x), (std::vector<double>{2, 2}));
  ctx.set_values(w, std::vector<double>{5, 6});
  ctx.run(step);
  EXPECT_EQ(ctx.get_values(w), (std::vector<double>{7, 8}));
}

// The same failure surfacing at a host read (a read waits for the stream first).
TEST(RunTest, AnAsynchronousFailureReportedByAReadLeavesTheOutputsUninitialized) {
  auto backend = std::make_shared<AsyncFailureBackend>();
  Context ctx(backend);
  auto w = ir::make_node("w", DType::F32, {2});
  auto step = ctx.compile(single_accum(pointwise(w, Op::Add, {of(w), ir::Operand::literal(1)})), "step");
  ctx.set_values(w, std::vector<double>{1, 2});
  ctx.run(step);
  backend->failed = true;
  EXPECT_THROW(ctx.get_values(w), RuntimeError);
  EXPECT_FALSE(ctx.is_initialized(w));
  EXPECT_THROW(ctx.get_values(w), UninitializedError) << "not the stale value";
}

}  // namespace
}  // namespace cannl::testing
