// NCCL loaded at run time: where libnccl is missing (CI, this machine) the load is a
// BackendUnavailable naming the library; where it exists, its version reads back. Collectives
// need several GPUs and run only on such a machine.
#include <gtest/gtest.h>

#include <string>

#include "backends/gpu/nccl_api.h"
#include "cannl/support/error.h"

namespace cannl::test_gpu {
namespace {

TEST(Nccl, LoadsOrNamesTheMissingLibrary) {
  try {
    const auto& nccl = backends::gpu::NcclApi::get();
    const std::string version = nccl.version();
    EXPECT_EQ(version.substr(0, 2), "2.") << version;
  } catch (const BackendUnavailable& e) {
    EXPECT_NE(std::string(e.what()).find("libnccl.so.2"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("NCCL"), std::string::npos) << e.what();
  }
}

TEST(Nccl, DeclarationsMatchTheAbi) {
  // ncclUniqueId is passed by value to ncclCommInitRank: its size is part of the ABI.
  EXPECT_EQ(sizeof(backends::gpu::ncclUniqueId), 128u);
  EXPECT_EQ(backends::gpu::ncclFloat32, 7);
  EXPECT_EQ(backends::gpu::ncclSum, 0);
}

}  // namespace
}  // namespace cannl::test_gpu
