// The gpu-emulator backend: the GPU pipeline run kernel by kernel on the interpreter, each kernel
// race-checked. A race a GPU would have (here a Grid loop over a recurrence, which the oracle
// cannot prove either way and so accepts as the user's assertion) is a RuntimeError naming the
// kernel and the cell; a race-free schedule computes the interpreter's bits (a training step
// under the default GPU schedule: tests/gpu/gpu_emulator_training_test.cpp).
#include <gtest/gtest.h>

#include "backends/run_util.h"
#include "cannl/backends/backend.h"
#include "cannl/schedule/transforms.h"
#include "cannl/support/config.h"
#include "cannl/support/error.h"

namespace cannl {
namespace {

using test_util::bytes_of;
using test_util::run_on;

ir::AxisIndex it(ir::Symbol s) { return ir::AxisIndex::iterator(s); }

TEST(GpuEmulator, IsABackendByName) {
  const auto backend = backends::make_backend("gpu-emulator");
  EXPECT_EQ(backend->name(), "gpu-emulator");
  EXPECT_TRUE(backend->target().workgroups);
}

// The emulator plans for an H200 (sm_90's limits, 132 multiprocessors, no tensor cores) and reads
// the GPU backends' keys, so that a schedule checked here is the one the GPU gets.
TEST(GpuEmulator, ItsTargetIsAnH200sWithTheGpuBackendsKeys) {
  test_util::ConfigGuard guard;
  const auto emulator = backends::make_gpu_emulator_backend();
  const ir::Target plain = emulator->target();
  EXPECT_EQ(plain.gpu, ir::sm90_gpu_limits());
  EXPECT_EQ(plain.gpu.compute_units, 132);
  EXPECT_TRUE(plain.gpu_mma_formats.empty());
  EXPECT_FALSE(plain.gpu_async_copy);
  config::set_override("gpu_tile_bk", "8");
  EXPECT_EQ(emulator->target().gpu_tile.bk, 8);
  config::set_override("gpu_tile_tm", "5");  // no whole register tiles per block
  EXPECT_THROW((void)emulator->target(), ConfigError);
  config::set_override("gpu_tile_tm", "0");
  config::set_override("gpu_tensor_cores", "on");
  EXPECT_THROW((void)emulator->target(), ConfigError);
}

// for i Grid: x[i + 1] = x[i] + 1: block i reads the cell block i - 1 writes.
TEST(GpuEmulator, ARaceBetweenBlocksIsARuntimeErrorNamingTheCell) {
  const auto x = ir::make_node("x", ir::DType::F32, {8});
  const ir::Symbol i = ir::fresh_symbol();
  const auto next = ir::apply(ir::Op::Add, ir::DType::F32, {ir::get(x, {it(i)}), ir::constant(1, ir::DType::F32)});
  const ir::LoweredRoutine serial{"recurrence", ir::for_loop(i, 0, 7, ir::set(x, {ir::AxisIndex{{{1, i}}, 1}}, next)), {}};
  const ir::LoweredRoutine grid = schedule::apply(serial, schedule::Retype{i, ir::AxisType::Grid});
  const auto emulator = backends::make_gpu_emulator_backend();
  const std::vector<test_util::Bytes> inputs{bytes_of(std::vector<float>(8, 0.0f))};
  try {
    run_on(*emulator, {grid, {x}}, inputs);
    FAIL() << "no race reported";
  } catch (const RuntimeError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("gpu-emulator: routine 'recurrence', launch 0 of 1: race on x element 1: written, then read by "
                        "block (0, *, *)"),
              std::string::npos)
        << what;
    EXPECT_NE(what.find("two blocks of one launch"), std::string::npos) << what;
    EXPECT_NE(what.find("# launch 0: grid 7 x 1 x 1, block 1 x 1 x 1"), std::string::npos) << what;
  }
  // Serially, the same routine runs.
  const auto out = run_on(*emulator, {serial, {x}}, inputs);
  EXPECT_EQ(test_util::values_of<float>(out[0]), (std::vector<float>{0, 1, 2, 3, 4, 5, 6, 7}));
}

}  // namespace
}  // namespace cannl
