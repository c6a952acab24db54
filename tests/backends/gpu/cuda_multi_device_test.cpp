// Several CUDA devices in one context, and NCCL between them, on the mock driver
// (mock_cuda_driver.c: two devices over host memory) and the mock NCCL (mock_nccl.c: reduces that
// memory on the host and logs every call): peer copies ordered by events, pinned host memory
// when the devices cannot reach each other, the exact sequence of NCCL calls data-parallel training makes
// (communicators once, then one group of in-place averages per step, ranks in device order),
// their sizes and results, NCCL's errors as named cannl errors, and a collective that never
// finishes ending in a DistributedError within distributed_timeout_s. What a real GPU adds (the
// copies' and collectives' speed, NCCL's own ring order) is left to a multi-GPU machine.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

#include "backends/gpu/cuda_device.h"
#include "backends/gpu/gpu_backend.h"
#include "backends/gpu/mock_libraries.h"
#include "backends/gpu/nccl_api.h"
#include "cannl/backends/multi_device.h"
#include "cannl/runtime/context.h"
#include "cannl/runtime/device_average.h"
#include "cannl/support/config.h"
#include "cannl/support/error.h"

namespace cannl::test_gpu {
namespace {

using ir::DType;
using runtime::Context;

class TwoMockGpus : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    driver_ = mock_cuda_driver(why);
    if (driver_ == nullptr) GTEST_SKIP() << why;
    errors_before_ = driver_->errors();
    driver_->set_peer_access(1);
  }
  void TearDown() override {
    config::clear_overrides();
    if (driver_ == nullptr) return;
    driver_->set_peer_access(1);
    EXPECT_EQ(driver_->errors() - errors_before_, 0) << "calls a real driver would reject";
    EXPECT_EQ(driver_->live_objects(), 0) << "allocations, events, streams or contexts not released";
  }
  std::shared_ptr<backends::Backend> gpu(int ordinal) const {
    return backends::make_gpu_backend(backends::gpu::open_cuda_on(*driver_->api, ordinal), codegen::GpuLanguage::Cuda);
  }
  Context two_gpus() const { return Context::on_devices({gpu(0), gpu(1)}); }

  const MockDriver* driver_ = nullptr;
  int errors_before_ = 0;
};

TEST_F(TwoMockGpus, CopyBetweenDevicesIsAPeerCopyOrderedByEvents) {
  auto gpus = two_gpus();
  ASSERT_EQ(gpus.num_devices(), 2);
  EXPECT_EQ(gpus.backend_name(), "cuda");
  auto d0 = gpus.device(0), d1 = gpus.device(1);
  auto x = ir::make_node("x", DType::F32, {5});
  d0.set_values(x, std::vector<double>{1, 2, 3, 4, 5});
  const int copies = driver_->peer_copies(), waits = driver_->stream_waits();
  Context::copy(d0, d1, x);
  EXPECT_EQ(driver_->peer_copies(), copies + 1);
  // dst's stream waits for src's work before the copy, src's for the copy after it.
  EXPECT_EQ(driver_->stream_waits(), waits + 2);
  EXPECT_EQ(d1.get_values(x), (std::vector<double>{1, 2, 3, 4, 5}));
  // Each direction enables peer access once, then reuses it.
  Context::copy(d1, d0, x);
  Context::copy(d0, d1, x);
  EXPECT_EQ(driver_->peer_copies(), copies + 3);
}

TEST_F(TwoMockGpus, DevicesThatCannotReachEachOtherCopyThroughPinnedHostMemory) {
  driver_->set_peer_access(0);
  auto gpus = two_gpus();
  auto d0 = gpus.device(0), d1 = gpus.device(1);
  auto x = ir::make_node("x", DType::F64, {3});
  d0.set_values(x, std::vector<double>{0.5, -1, 7});
  const int copies = driver_->peer_copies(), pinned = driver_->pinned_allocations();
  Context::copy(d0, d1, x);
  EXPECT_EQ(driver_->peer_copies(), copies);
  EXPECT_EQ(driver_->pinned_allocations(), pinned + 1);  // freed again: TearDown counts what lives
  EXPECT_EQ(d1.get_values(x), (std::vector<double>{0.5, -1, 7}));
}

// A peer path the driver cannot map (CUDA_ERROR_TOO_MANY_PEERS: a device maps at most 8 peers)
// is no error: the copies go through pinned host memory, as without a path.
TEST_F(TwoMockGpus, APeerPathTheDriverCannotMapCopiesThroughPinnedHostMemory) {
  driver_->set_peer_access(2);
  auto gpus = two_gpus();
  auto d0 = gpus.device(0), d1 = gpus.device(1);
  auto x = ir::make_node("x", DType::F32, {4});
  d0.set_values(x, std::vector<double>{1, -2, 3.5, 8});
  const int copies = driver_->peer_copies(), pinned = driver_->pinned_allocations();
  Context::copy(d0, d1, x);
  Context::copy(d0, d1, x);
  EXPECT_EQ(driver_->peer_copies(), copies);
  EXPECT_EQ(driver_->pinned_allocations(), pinned + 2);
  EXPECT_EQ(d1.get_values(x), (std::vector<double>{1, -2, 3.5, 8}));
}

TEST_F(TwoMockGpus, AContextHoldsDevicesOfOneKind) {
  EXPECT_THROW(Context::on_devices({}), RuntimeUsageError);
  try {
    Context::on_devices({gpu(0), backends::make_interpreter_backend()});
    ADD_FAILURE() << "expected RuntimeUsageError";
  } catch (const RuntimeUsageError& e) {
    EXPECT_NE(std::string(e.what()).find("device 1 interpreter"), std::string::npos) << e.what();
  }
}

class TwoMockGpusWithNccl : public TwoMockGpus {
 protected:
  void SetUp() override {
    TwoMockGpus::SetUp();
    if (driver_ == nullptr) return;
    std::string why;
    nccl_ = mock_nccl(why);
    if (nccl_ == nullptr) GTEST_SKIP() << why;
    config::set_override("nccl_library", nccl_->library->path());
    nccl_->clear_log();
    nccl_errors_before_ = nccl_->errors();
  }
  void TearDown() override {
    if (nccl_ != nullptr) {
      nccl_->set_async_error(0);
      nccl_->set_version(22105);
      driver_->set_stuck(0);
      EXPECT_EQ(nccl_->errors() - nccl_errors_before_, 0) << "NCCL calls that would fail or hang on a real NCCL";
    }
    TwoMockGpus::TearDown();
  }
  std::string log() const { return nccl_->log(); }

  const MockNccl* nccl_ = nullptr;
  int nccl_errors_before_ = 0;
};

TEST_F(TwoMockGpusWithNccl, AveragesEveryNodeInOneGroupOfInPlaceCalls) {
  auto gpus = two_gpus();
  auto d0 = gpus.device(0), d1 = gpus.device(1);
  auto a = ir::make_node("grad_a", DType::F32, {2, 3});
  auto b = ir::make_node("grad_b", DType::F32, {4});
  d0.set_values(a, std::vector<double>{1, 2, 3, 4, 5, 6});
  d1.set_values(a, std::vector<double>{3, 2, 1, 0, -1, 0.5});
  d0.set_values(b, std::vector<double>{0.25, 8, -8, 1e-3});
  d1.set_values(b, std::vector<double>{0.75, 0, 8, 3e-3});
  {
    auto average = runtime::DeviceAverage::open_nccl({d0, d1}, nullptr);
    EXPECT_EQ(average->describe(), "NCCL 2.21.5: 2 device(s) x 1 process(es)");
    EXPECT_EQ(log(), "CommInitAll(n=2,devices=0,1)");
    nccl_->clear_log();
    const std::vector<ir::NodeRef> nodes{a, b};
    int another_library = 0;  // the thread's own context, which the all-reduce leaves current
    const auto callers = reinterpret_cast<backends::gpu::cuda::CUcontext>(&another_library);
    driver_->api->cuCtxSetCurrent(callers);
    average->run(nodes, "gradients of step 0");
    backends::gpu::cuda::CUcontext after = nullptr;
    driver_->api->cuCtxGetCurrent(&after);
    EXPECT_EQ(after, callers) << "the all-reduce switched among the devices' contexts and left one current";
    driver_->api->cuCtxSetCurrent(nullptr);
    // Device by device, node by node, in one group: counts are the nodes' elements, f32 (7), ncclAvg (4).
    EXPECT_EQ(log(), "GroupStart;AllReduce(rank=0,count=6,type=7,op=4,inplace);AllReduce(rank=0,count=4,type=7,op=4,inplace);"
                     "AllReduce(rank=1,count=6,type=7,op=4,inplace);AllReduce(rank=1,count=4,type=7,op=4,inplace);GroupEnd");
    EXPECT_EQ(nccl_->live_comms(), 2);
  }
  EXPECT_EQ(nccl_->live_comms(), 0) << "the communicators go with the DeviceAverage";
  const std::vector<double> mean_a{2, 2, 2, 2, 2, 3.25};
  const std::vector<float> b_sum{0.25f + 0.75f, 8.0f, 0.0f, 1e-3f + 3e-3f};
  EXPECT_EQ(d0.get_values(a), mean_a);
  EXPECT_EQ(d1.get_values(a), mean_a);
  // Bitwise what the host path computes for two replicas: (x0 + x1) * 0.5 in f32.
  for (std::size_t i = 0; i < b_sum.size(); ++i) {
    const double expected = static_cast<double>(b_sum[i] * 0.5f);
    EXPECT_EQ(d0.get_values(b)[i], expected) << i;
    EXPECT_EQ(d1.get_values(b)[i], expected) << i;
  }
}

TEST_F(TwoMockGpusWithNccl, SeveralProcessesShareRankZerosIdAndNumberDevicesInOrder) {
  auto gpus = two_gpus();
  // Process 0 of 2 (the other process is not there: no collective runs, only the setup).
  backends::DeviceAllReduceRanks ranks{0, 2, nullptr};
  // Stands in for MPI: rank 0's bytes (the id its ncclGetUniqueId made) reach rank 1; the mock
  // refuses any other id.
  int broadcasts = 0;
  std::vector<std::byte> rank0_id;
  ranks.broadcast_from_rank0 = [&](std::span<std::byte> bytes) {
    ++broadcasts;
    ASSERT_EQ(bytes.size(), 128u);
    if (ranks.process_rank == 0) rank0_id.assign(bytes.begin(), bytes.end());
    else std::copy(rank0_id.begin(), rank0_id.end(), bytes.begin());
  };
  std::vector<backends::Backend*> devices{const_cast<backends::Backend*>(&gpus.device(0).backend()),
                                          const_cast<backends::Backend*>(&gpus.device(1).backend())};
  {
    auto collective = backends::open_nccl_all_reduce(devices, ranks);
    EXPECT_EQ(broadcasts, 1);
    EXPECT_EQ(log(), "GetUniqueId;GroupStart;CommInitRank(ranks=4,rank=0);CommInitRank(ranks=4,rank=1);GroupEnd");
  }
  nccl_->clear_log();
  ranks.process_rank = 1;  // process 1 takes its id from the broadcast and ranks 2, 3
  { auto collective = backends::open_nccl_all_reduce(devices, ranks); }
  EXPECT_EQ(broadcasts, 2);
  EXPECT_EQ(log(), "GroupStart;CommInitRank(ranks=4,rank=2);CommInitRank(ranks=4,rank=3);GroupEnd");
}

TEST_F(TwoMockGpusWithNccl, NcclFailuresAreDistributedErrorsNamingTheCall) {
  auto gpus = two_gpus();
  auto d0 = gpus.device(0), d1 = gpus.device(1);
  auto a = ir::make_node("grad_a", DType::F64, {3});
  d0.set_values(a, std::vector<double>{1, 2, 3});
  d1.set_values(a, std::vector<double>{1, 2, 3});
  auto average = runtime::DeviceAverage::open_nccl({d0, d1}, nullptr);
  nccl_->fail_next(4);
  const std::vector<ir::NodeRef> nodes{a};
  try {
    average->run(nodes, "gradients of step 7");
    ADD_FAILURE() << "expected DistributedError";
  } catch (const DistributedError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("ncclAllReduce failed: mock: invalid argument"), std::string::npos) << message;
    EXPECT_NE(message.find("gradients of step 7"), std::string::npos) << message;
  }
  EXPECT_NE(log().find("GroupEnd"), std::string::npos) << "a failed call still closes the group: " << log();
  // The other device's collective would wait for the failed one forever: every communicator
  // is aborted, and a later average says why rather than hang.
  EXPECT_NE(log().find("CommAbort"), std::string::npos) << log();
  // The failed average left its nodes uninitialized; new values, and the next average still fails.
  EXPECT_FALSE(d0.is_initialized(a));
  d0.set_values(a, std::vector<double>{1, 2, 3});
  d1.set_values(a, std::vector<double>{1, 2, 3});
  try {
    average->run(nodes, "gradients of step 8");
    ADD_FAILURE() << "expected DistributedError";
  } catch (const DistributedError& e) {
    EXPECT_NE(std::string(e.what()).find("aborted after the all-reduce of gradients of step 7 failed"), std::string::npos)
        << e.what();
  }
  auto b = ir::make_node("b", DType::I32, {3});
  d0.set_values(b, std::vector<double>{1, 2, 3});
  d1.set_values(b, std::vector<double>{1, 2, 3});
  const std::vector<ir::NodeRef> ints{b};
  EXPECT_THROW(average->run(ints, "ints"), RuntimeUsageError);
  auto missing = ir::make_node("missing", DType::F64, {3});
  const std::vector<ir::NodeRef> absent{missing};
  EXPECT_THROW(average->run(absent, "absent"), UninitializedError);
}

// Two devices each holding `values` in node `a`, and NCCL between them.
struct AveragedPair {
  Context gpus;
  ir::NodeRef a;
  std::shared_ptr<runtime::DeviceAverage> average;
};

AveragedPair averaged_pair(const Context& gpus) {
  auto a = ir::make_node("grad_a", DType::F32, {2});
  for (int d = 0; d < 2; ++d) gpus.device(d).set_values(a, std::vector<double>{1, 2});
  return {gpus, a, runtime::DeviceAverage::open_nccl({gpus.device(0), gpus.device(1)}, nullptr)};
}

TEST_F(TwoMockGpusWithNccl, AnAsynchronousNcclErrorAbortsTheCommunicatorsAndNamesIt) {
  AveragedPair pair = averaged_pair(two_gpus());
  driver_->set_stuck(1);  // the collective does not finish; NCCL reports why
  nccl_->set_async_error(6);
  const std::vector<ir::NodeRef> nodes{pair.a};
  try {
    pair.average->run(nodes, "gradients of step 2");
    ADD_FAILURE() << "expected DistributedError";
  } catch (const DistributedError& e) {
    EXPECT_NE(std::string(e.what()).find("gradients of step 2 failed on device 0: mock: remote process exited"),
              std::string::npos) << e.what();
  }
  EXPECT_NE(log().find("CommAbort(rank=0);CommAbort(rank=1)"), std::string::npos) << log();
  EXPECT_EQ(nccl_->live_comms(), 0);
  driver_->set_stuck(0);
  // Whatever the aborted collective wrote is no value: a read is an UninitializedError.
  for (int d = 0; d < 2; ++d) EXPECT_THROW(pair.gpus.device(d).get_values(pair.a), UninitializedError) << d;
  for (int d = 0; d < 2; ++d) pair.gpus.device(d).set_values(pair.a, std::vector<double>{1, 2});
  EXPECT_THROW(pair.average->run(nodes, "gradients of step 3"), DistributedError) << "the communicators are gone";
}

TEST_F(TwoMockGpusWithNccl, AFailedEventRecordAfterTheCollectivesLeaksNoEvent) {
  {
    AveragedPair pair = averaged_pair(two_gpus());
    // The wait's events: device 0's made and recorded, device 1's made, then its record fails.
    driver_->fail_event_record(2);
    const std::vector<ir::NodeRef> nodes{pair.a};
    try {
      pair.average->run(nodes, "gradients of step 5");
      ADD_FAILURE() << "expected the failed cuEventRecord";
    } catch (const RuntimeError& e) {
      EXPECT_NE(std::string(e.what()).find("cuEventRecord"), std::string::npos) << e.what();
    }
    driver_->fail_event_record(0);
  }
  EXPECT_EQ(driver_->live_objects(), 0) << "the failed wait left its events behind";
}

TEST_F(TwoMockGpusWithNccl, ACollectiveThatNeverFinishesTimesOut) {
  config::set_override("distributed_timeout_s", "0.2");
  AveragedPair pair = averaged_pair(two_gpus());
  driver_->set_stuck(1);  // a peer that hangs: no error, no progress
  const std::vector<ir::NodeRef> nodes{pair.a};
  const auto start = std::chrono::steady_clock::now();
  try {
    pair.average->run(nodes, "gradients of step 4");
    ADD_FAILURE() << "expected DistributedError";
  } catch (const DistributedError& e) {
    EXPECT_NE(std::string(e.what()).find("did not complete within 0.2 s"), std::string::npos) << e.what();
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
  EXPECT_NE(log().find("CommAbort(rank=0);CommAbort(rank=1)"), std::string::npos) << log();
}

TEST_F(TwoMockGpusWithNccl, OneGpuListedTwiceIsAUsageError) {
  auto twice = Context::on_devices({gpu(0), gpu(0)});
  try {
    runtime::DeviceAverage::open_nccl({twice.device(0), twice.device(1)}, nullptr);
    ADD_FAILURE() << "expected RuntimeUsageError";
  } catch (const RuntimeUsageError& e) {
    EXPECT_NE(std::string(e.what()).find("CUDA device 0 is listed twice"), std::string::npos) << e.what();
  }
  EXPECT_EQ(log(), "");
}

TEST_F(TwoMockGpusWithNccl, AnNcclWithoutAverageIsBackendUnavailable) {
  nccl_->set_version(20905);
  try {
    backends::gpu::NcclApi::load({nccl_->library->path()});
    ADD_FAILURE() << "expected BackendUnavailable";
  } catch (const BackendUnavailable& e) {
    EXPECT_NE(std::string(e.what()).find("version 2.9.5; cannl needs 2.10 or later"), std::string::npos) << e.what();
  }
}

TEST_F(TwoMockGpus, AMissingNcclIsBackendUnavailableNamingTheLibrary) {
  config::set_override("nccl_library", "/nonexistent/libnccl.so.2");
  auto gpus = two_gpus();
  try {
    runtime::DeviceAverage::open_nccl({gpus.device(0), gpus.device(1)}, nullptr);
    ADD_FAILURE() << "expected BackendUnavailable";
  } catch (const BackendUnavailable& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/libnccl.so.2"), std::string::npos) << e.what();
  }
}

TEST(NcclAllReduce, RunsBetweenCudaDevicesOnly) {
  const auto interpreter = backends::make_interpreter_backend();
  std::vector<backends::Backend*> devices{interpreter.get()};
  EXPECT_THROW(backends::open_nccl_all_reduce(devices, {}), RuntimeUsageError);
}

}  // namespace
}  // namespace cannl::test_gpu
