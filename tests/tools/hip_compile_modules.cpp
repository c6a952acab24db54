// hip_compile_modules <dir> [arch]: compiles with hiprtc every HIP module that test_gpu wrote
// under config key hip_compile_check (`<arch>-<digest>.hip`; with `arch`, only that
// architecture's), in this process of its own (hiprtc
// cannot share one with PoCL), prints the counts and appends them to hip_compile_check.tsv in the
// working directory for scripts/test.sh. Exit status 0 when all compiled, 1 when hiprtc rejected
// one (its log and the file are printed), 77 (skipped) without hiprtc.
#include <cstdio>
#include <exception>
#include <fstream>
#include <string>

#include "backends/gpu/hip_compile_check.h"
#include "cannl/support/error.h"

int main(int argc, char** argv) {
  if (argc != 2 && argc != 3) {
    std::fprintf(stderr, "usage: hip_compile_modules <folder of .hip modules> [architecture]\n");
    return 2;
  }
  try {
    const auto checks = cannl::backends::gpu::compile_hip_check_modules(argv[1], argc == 3 ? argv[2] : "");
    std::string archs;
    for (const auto& arch : checks.architectures) archs += (archs.empty() ? "" : ",") + arch;
    std::printf("[cannl] hiprtc compiled %lld HIP modules (%lld kernels) for %s in %.1f s\n",
                static_cast<long long>(checks.modules), static_cast<long long>(checks.kernels),
                archs.empty() ? "no architecture" : archs.c_str(), checks.seconds);
    std::ofstream("hip_compile_check.tsv", std::ios::app)
        << checks.modules << "\t" << checks.kernels << "\t" << checks.seconds << "\tok\n";
    return 0;
  } catch (const cannl::BackendUnavailable& e) {
    std::printf("[cannl] no HIP module checked: %s\n", e.what());
    std::ofstream("hip_compile_check.tsv", std::ios::app) << "0\t0\t0\tunavailable\n";
    return 77;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
}
