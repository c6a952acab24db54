// Loading GPU libraries at run time: a missing library or function is a BackendUnavailable that
// names what was tried; the CUDA toolkit's folders are searched after the loader's path.
#include "backends/gpu/api_library.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <optional>

#include "cannl/support/error.h"

namespace cannl::backends::gpu {
namespace {

// Sets an environment variable for the scope, restoring the old value after.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value != nullptr) setenv(name, value, 1); else unsetenv(name);
  }
  ~ScopedEnv() {
    if (old_) setenv(name_, old_->c_str(), 1); else unsetenv(name_);
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

TEST(ApiLibrary, AMissingLibraryNamesEveryCandidateAndWhy) {
  try {
    ApiLibrary({"libcannl-missing-a.so.1", "/no/such/dir/libcannl-missing-b.so"}, "the test API");
    FAIL() << "expected BackendUnavailable";
  } catch (const BackendUnavailable& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("the test API is not available"), std::string::npos) << message;
    EXPECT_NE(message.find("libcannl-missing-a.so.1: "), std::string::npos) << message;
    EXPECT_NE(message.find("/no/such/dir/libcannl-missing-b.so: "), std::string::npos) << message;
  }
}

TEST(ApiLibrary, TakesTheFirstCandidateThatLoadsAndBindsItsFunctions) {
  const ApiLibrary lib({"libcannl-missing-a.so.1", "libc.so.6"}, "libc");
  EXPECT_EQ(lib.path(), "libc.so.6");
  std::size_t (*length)(const char*) = nullptr;
  lib.bind(length, "strlen");
  ASSERT_NE(length, nullptr);
  EXPECT_EQ(length("cannl"), 5u);
  int (*absent)() = nullptr;
  lib.bind_optional(absent, "cannl_no_such_function");
  EXPECT_EQ(absent, nullptr);
  try {
    lib.bind(absent, "cannl_no_such_function");
    FAIL() << "expected BackendUnavailable";
  } catch (const BackendUnavailable& e) {
    EXPECT_NE(std::string(e.what()).find("has no function cannl_no_such_function"), std::string::npos) << e.what();
  }
}

TEST(ApiLibrary, CudaToolkitCandidatesSearchCudaPathThenTheDefaultFolder) {
  const ScopedEnv path("CUDA_PATH", "/opt/cuda-test");
  const ScopedEnv home("CUDA_HOME", nullptr);
  const auto names = cuda_toolkit_candidates({"libnvrtc.so.13", "libnvrtc.so"});
  const std::vector<std::string> expected{"libnvrtc.so.13",
                                          "libnvrtc.so",
                                          "/opt/cuda-test/lib64/libnvrtc.so.13",
                                          "/opt/cuda-test/lib64/libnvrtc.so",
                                          "/opt/cuda-test/lib/libnvrtc.so.13",
                                          "/opt/cuda-test/lib/libnvrtc.so",
                                          "/usr/local/cuda/lib64/libnvrtc.so.13",
                                          "/usr/local/cuda/lib64/libnvrtc.so",
                                          "/usr/local/cuda/lib/libnvrtc.so.13",
                                          "/usr/local/cuda/lib/libnvrtc.so"};
  EXPECT_EQ(names, expected);
}

}  // namespace
}  // namespace cannl::backends::gpu
