// Multi-device contexts: devices with their own buffers and queues, copies between them in order.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "cannl/backends/multi_device.h"
#include "cannl/runtime/context.h"
#include "cannl/runtime/device_average.h"
#include "cannl/support/config.h"
#include "cannl/support/error.h"
#include "runtime/async_failure_backend.h"
#include "runtime/packing_check.h"
#include "runtime/test_util.h"

namespace cannl::testing {
namespace {

using ir::DType;
using ir::Op;
using runtime::Context;

TEST(DevicesTest, EachDeviceHasItsOwnBuffersAndIndex) {
  auto devices = Context::cpu_devices(3);
  ASSERT_EQ(devices.num_devices(), 3);
  auto d2 = devices.device(2);
  EXPECT_EQ(d2.device_index(), 2);
  EXPECT_EQ(d2.num_devices(), 3);
  auto x = ir::make_node("x", DType::F32, {4});
  d2.set_values(x, std::vector<double>{1, 2, 3, 4});
  EXPECT_TRUE(d2.has_buffer(x));
  EXPECT_FALSE(devices.device(0).has_buffer(x));
  EXPECT_THROW(devices.device(3), RuntimeUsageError);
  EXPECT_EQ(Context::cpu().num_devices(), 1);
}

TEST(DevicesTest, CopyCarriesAQueuedResultToAnotherDeviceInOrder) {
  auto devices = Context::cpu_devices(2);
  auto d0 = devices.device(0), d1 = devices.device(1);
  auto x = ir::make_node("x", DType::F32, {256});
  auto y = ir::make_node("y", DType::F32, {256});
  auto z = ir::make_node("z", DType::F32, {256});
  std::vector<double> xs(256);
  for (int i = 0; i < 256; ++i) xs[static_cast<std::size_t>(i)] = i;
  d0.set_values(x, xs);
  auto twice = d0.compile(single_accum(pointwise(y, Op::Add, {of(x), of(x)})), "twice");
  auto plus_one = d1.compile(single_accum(pointwise(z, Op::Add, {of(y), ir::Operand::literal(1)})), "plus_one");
  // Queued: the copy must wait for "twice" on device 0, "plus_one" for the copy on device 1, and
  // the second "twice" (which overwrites y) for the copy's read.
  d0.run(twice);
  Context::copy(d0, d1, y);
  d1.run(plus_one);
  d0.set_values(x, std::vector<double>(256, 0.0));
  d0.run(twice);
  const auto zs = d1.get_values(z);
  for (int i = 0; i < 256; ++i) ASSERT_EQ(zs[static_cast<std::size_t>(i)], 2.0 * i + 1) << i;
  EXPECT_EQ(d0.get_values(y), std::vector<double>(256, 0.0));
}

TEST(DevicesTest, CopyOfANodeNeverWrittenIsUninitializedError) {
  auto devices = Context::cpu_devices(2);
  auto d1 = devices.device(1);
  auto x = ir::make_node("x", DType::F32, {4});
  try {
    Context::copy(devices.device(0), d1, x);
    ADD_FAILURE() << "expected UninitializedError";
  } catch (const UninitializedError& e) {
    EXPECT_NE(std::string(e.what()).find("device 0"), std::string::npos) << e.what();
  }
}

TEST(DevicesTest, CopyBetweenASingleDeviceContextAndADevice) {
  auto host = Context::cpu();
  auto devices = Context::cpu_devices(2);
  auto d1 = devices.device(1);
  auto x = ir::make_node("x", DType::F64, {3});
  host.set_values(x, std::vector<double>{0.5, -1, 7});
  Context::copy(host, d1, x);
  EXPECT_EQ(d1.get_values(x), (std::vector<double>{0.5, -1, 7}));
}

// A copy through the host from a GPU-style context (no worker queue: its stream is the queue)
// waits for the source's stream, where the failure of a run still on it surfaces: the run's
// outputs are then no value, on the source and on the destination.
TEST(DevicesTest, ACopyAfterAnAsynchronousFailureLeavesTheSourceUninitialized) {
  auto backend = std::make_shared<AsyncFailureBackend>();
  Context gpu(backend);
  auto host = Context::interpreter();
  auto w = ir::make_node("w", DType::F32, {2});
  auto step = gpu.compile(single_accum(pointwise(w, Op::Add, {of(w), ir::Operand::literal(1)})), "step");
  gpu.set_values(w, std::vector<double>{1, 2});
  gpu.run(step);
  backend->failed = true;
  EXPECT_THROW(Context::copy(gpu, host, w), RuntimeError);
  EXPECT_FALSE(gpu.is_initialized(w)) << "the failed run's output still counted as a value";
  EXPECT_FALSE(host.is_initialized(w));
  EXPECT_THROW(Context::copy(gpu, host, w), UninitializedError);
}

TEST(DevicesTest, SynchronizeWaitsForQueuedRoutines) {
  auto devices = Context::cpu_devices(2);
  auto d0 = devices.device(0);
  auto x = ir::make_node("x", DType::F32, {4});
  auto y = ir::make_node("y", DType::F32, {4});
  d0.set_values(x, std::vector<double>{1, 2, 3, 4});
  auto r = d0.compile(single_accum(pointwise(y, Op::Add, {of(x), of(x)})), "double_x");
  d0.run(r);
  d0.synchronize();
  EXPECT_EQ(d0.get_values(y), (std::vector<double>{2, 4, 6, 8}));
}

// A packed operand is made again whenever its source changes, also when the change comes from
// another device (the copy raises the node's write count like an upload).
TEST(DevicesTest, ACopyFromAnotherDeviceRefreshesAPackedOperand) {
  const PackedMatmul mm;
  auto devices = Context::cpu_devices(2);
  auto d0 = devices.device(0), d1 = devices.device(1);
  d1.set_values(mm.a, PackedMatmul::a_values());
  d1.set_values(mm.b, PackedMatmul::b_values(0));
  const auto routine = mm.compile(d1);
  d1.run(routine);
  ASSERT_EQ(d1.get_bytes(mm.c), mm.reference(0));
  d0.set_values(mm.b, PackedMatmul::b_values(3));
  Context::copy(d0, d1, mm.b);
  d1.run(routine);
  EXPECT_EQ(d1.get_bytes(mm.c), mm.reference(3)) << "b came from device 0: its packing must run again";
}

/// Averages f32 buffers on the host, as NCCL's ncclAvg would on the devices.
class HostAverage : public backends::DeviceAllReduce {
 public:
  void average(const std::vector<std::vector<backends::Buffer*>>& buffers, backends::ReduceType,
               std::string_view) override {
    for (std::size_t k = 0; k < buffers.front().size(); ++k) {
      std::vector<float> sum(buffers.front()[k]->size() / sizeof(float)), values(sum.size());
      for (const auto& device : buffers) {
        device[k]->read(std::as_writable_bytes(std::span(values)));
        for (std::size_t i = 0; i < sum.size(); ++i) sum[i] += values[i] / static_cast<float>(buffers.size());
      }
      for (const auto& device : buffers) device[k]->write(std::as_bytes(std::span(sum)));
    }
  }
  std::string describe() const override { return "average on the host"; }
};

TEST(DevicesTest, ADeviceAverageRefreshesAPackedOperand) {
  const PackedMatmul mm;
  auto devices = Context::on_devices({backends::make_interpreter_backend(), backends::make_interpreter_backend()});
  auto d0 = devices.device(0), d1 = devices.device(1);
  for (auto* d : {&d0, &d1}) d->set_values(mm.a, PackedMatmul::a_values());
  d0.set_values(mm.b, PackedMatmul::b_values(3));
  d1.set_values(mm.b, PackedMatmul::b_values(3));
  const auto routine = mm.compile(d1);
  d1.set_values(mm.b, PackedMatmul::b_values(0));
  d1.run(routine);
  ASSERT_EQ(d1.get_bytes(mm.c), mm.reference(0));
  // b_values(0) and b_values(3) average to another matrix; the mean of b on both devices is what
  // device 1 must multiply by now.
  auto average = runtime::DeviceAverage::over({d0, d1}, std::make_unique<HostAverage>());
  const std::vector<ir::NodeRef> nodes{mm.b};
  average->run(nodes, "b");
  runtime::Context interp = runtime::Context::interpreter();
  const auto r = interp.compile(mm.comp, "mm_reference");
  interp.set_values(mm.a, PackedMatmul::a_values());
  interp.set_values(mm.b, d1.get_values(mm.b));
  interp.run(r);
  d1.run(routine);
  EXPECT_EQ(d1.get_bytes(mm.c), interp.get_bytes(mm.c)) << "b was averaged: its packing must run again";
}

// The devices of cpu_devices run their routines on worker threads: the average must wait for
// the runs queued before it (else it reads, and overwrites, values they are still writing), and
// the runs queued after it read the mean.
TEST(DevicesTest, ADeviceAverageWaitsForTheRunsQueuedOnTheDevices) {
  constexpr std::int64_t kCells = 1 << 20;
  constexpr int kRuns = 40;
  auto devices = Context::cpu_devices(2);
  auto d0 = devices.device(0), d1 = devices.device(1);
  auto w = ir::make_node("w", DType::F32, {kCells});
  auto step = [&](Context& d) {
    return d.compile(single_accum(pointwise(w, Op::Add, {of(w), ir::Operand::literal(1)})), "increment");
  };
  const auto inc0 = step(d0), inc1 = step(d1);
  d0.set_values(w, std::vector<double>(kCells, 0.0));
  d1.set_values(w, std::vector<double>(kCells, 2.0));
  for (int k = 0; k < kRuns; ++k) {
    d0.run(inc0);
    d1.run(inc1);
  }
  auto average = runtime::DeviceAverage::over({d0, d1}, std::make_unique<HostAverage>());
  const std::vector<ir::NodeRef> nodes{w};
  average->run(nodes, "w");  // the mean of kRuns and kRuns + 2
  d0.run(inc0);
  d1.run(inc1);
  const std::vector<double> expected(kCells, kRuns + 2.0);
  EXPECT_EQ(d0.get_values(w), expected);
  EXPECT_EQ(d1.get_values(w), expected);
}

/// Averages the first buffer, then fails as a collective whose peer died does: the buffers hold
/// partly averaged values.
class AverageFailingHalfWay : public backends::DeviceAllReduce {
 public:
  void average(const std::vector<std::vector<backends::Buffer*>>& buffers, backends::ReduceType type,
               std::string_view what) override {
    const std::vector<std::vector<backends::Buffer*>> first{{buffers[0][0]}, {buffers[1][0]}};
    HostAverage().average(first, type, what);
    throw DistributedError("the all-reduce of " + std::string(what) + " failed: a peer died");
  }
  std::string describe() const override { return "an average that fails half way"; }
};

// A collective that fails may have averaged some buffers and not others: every node it was to
// average holds neither its value nor the mean, so reading one is an UninitializedError (as after
// a failed run), not silently half-averaged gradients.
TEST(DevicesTest, AFailedDeviceAverageLeavesItsNodesUninitialized) {
  auto devices = Context::on_devices({backends::make_interpreter_backend(), backends::make_interpreter_backend()});
  auto d0 = devices.device(0), d1 = devices.device(1);
  auto a = ir::make_node("grad_a", DType::F32, {2});
  auto b = ir::make_node("grad_b", DType::F32, {2});
  for (auto* d : {&d0, &d1}) {
    d->set_values(a, std::vector<double>{d->device_index() * 2.0, 1});
    d->set_values(b, std::vector<double>{d->device_index() * 4.0, 1});
  }
  auto average = runtime::DeviceAverage::over({d0, d1}, std::make_unique<AverageFailingHalfWay>());
  const std::vector<ir::NodeRef> nodes{a, b};
  EXPECT_THROW(average->run(nodes, "gradients of step 1"), DistributedError);
  for (auto* d : {&d0, &d1})
    for (const auto& node : nodes) {
      EXPECT_FALSE(d->is_initialized(node)) << node->label << " on device " << d->device_index();
      EXPECT_THROW(d->get_values(node), UninitializedError);
    }
}

// Contexts opened one by one are each their own device 0: the message names the device by its
// place in the average, and says why it holds no value.
TEST(DevicesTest, ANodeMissingOnOneDeviceIsNamedByItsPlaceInTheAverage) {
  Context first = Context::interpreter(), second = Context::interpreter();
  auto g = ir::make_node("grad_g", DType::F32, {2});
  first.set_values(g, std::vector<double>{1, 2});
  auto average = runtime::DeviceAverage::over({first, second}, std::make_unique<HostAverage>());
  const std::vector<ir::NodeRef> nodes{g};
  try {
    average->run(nodes, "gradients");
    ADD_FAILURE() << "expected UninitializedError";
  } catch (const UninitializedError& e) {
    EXPECT_NE(std::string(e.what()).find("holds no value on device 1 of 2 (interpreter): it was never written"),
              std::string::npos) << e.what();
  }
  EXPECT_EQ(first.get_values(g), (std::vector<double>{1, 2})) << "nothing touched";
}

TEST(DevicesTest, AWeakHandleOfADeviceLocksWithItsGroup) {
  auto devices = Context::cpu_devices(2);
  runtime::WeakContext weak(devices.device(1));
  const auto locked = weak.lock();
  ASSERT_TRUE(locked.has_value());
  EXPECT_EQ(locked->num_devices(), 2);
  EXPECT_EQ(locked->device_index(), 1);
  EXPECT_EQ(locked->device(0).device_index(), 0);
}

// Devices of backends the caller opened: each its own buffers, copies between them through the
// host (the C and interpreter backends have no device-to-device copy), one kind per context.
TEST(DevicesTest, OnDevicesHoldsOneDevicePerBackend) {
  auto devices = Context::on_devices({backends::make_interpreter_backend(), backends::make_interpreter_backend()});
  ASSERT_EQ(devices.num_devices(), 2);
  auto d0 = devices.device(0), d1 = devices.device(1);
  auto x = ir::make_node("x", DType::F32, {3});
  d0.set_values(x, std::vector<double>{1, -2, 3});
  EXPECT_FALSE(d1.has_buffer(x));
  Context::copy(d0, d1, x);
  EXPECT_EQ(d1.get_values(x), (std::vector<double>{1, -2, 3}));
  EXPECT_THROW(Context::on_devices({}), RuntimeUsageError);
  EXPECT_THROW(Context::on_devices({backends::make_interpreter_backend(), nullptr}), RuntimeUsageError);
}

TEST(DevicesTest, CudaDevicesNamesABadOrdinalList) {
  config::set_override("cuda_devices", "0,x");
  try {
    Context::cuda_devices();
    ADD_FAILURE() << "expected ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("'x' is not a device ordinal"), std::string::npos) << e.what();
  }
  config::clear_overrides();
  EXPECT_THROW(Context::cuda_devices(), RuntimeUsageError) << "no ordinals anywhere";
}

}  // namespace
}  // namespace cannl::testing
