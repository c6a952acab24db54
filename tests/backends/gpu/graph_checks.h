#pragma once
// Graph replay checks shared by the CUDA and HIP mock tests: a routine with a scratch array (a
// memset node), a kernel that reads a static value and one that does not, compiled on a device of
// a mock library that logs every kernel launch and memset in one form, whether it came directly
// or from a graph; a run's log names the caller's buffers ("a", "out", "data", "row") and the
// executable's scratch ("scratch0") so that logs of two executables compare.
//
//   GraphRuns runs(device, codegen::GpuLanguage::Cuda, {mock->log, mock->clear_log, mock->declare_kernel});
//   GpuExecutable& exe = runs.compile();
//   const GraphRuns::Buffers b = runs.buffers();
//   EXPECT_EQ(runs.run(exe, b, 2), runs.direct_run(b, 2));

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <memory>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "backends/gpu/device.h"
#include "backends/gpu/gpu_backend.h"
#include "backends/gpu/gpu_executable.h"
#include "cannl/codegen/gpu_codegen.h"
#include "cannl/support/config.h"

namespace cannl::test_gpu {

/// tmp[0] = sum_i a[i]; out[0] = tmp[0]; row[j] = data[batch, j]: tmp is a Local array (device
/// scratch, zeroed each run), the sum a serial kernel, and only the row copy (a parallel kernel
/// under the GPU schedule) reads the static `batch`.
inline backends::CompileRequest summing_and_gathering() {
  auto a = ir::make_node("a", ir::DType::F32, {8});
  auto out = ir::make_node("out", ir::DType::F32, {1});
  auto data = ir::make_node("data", ir::DType::F32, {4, 256});
  auto row = ir::make_node("row", ir::DType::F32, {256});
  auto tmp = ir::make_node("tmp", ir::DType::F32, {1});
  const ir::StaticSymbol batch{ir::fresh_symbol(), 4, "batch"};
  const ir::Symbol i = ir::fresh_symbol(), j = ir::fresh_symbol();
  const std::vector<ir::AxisIndex> at0{ir::AxisIndex::fixed(0)};
  const auto sum = ir::apply(ir::Op::Add, ir::DType::F32, {ir::get(tmp, at0), ir::get(a, {ir::AxisIndex::iterator(i)})});
  const ir::AxisIndex batch_row{{{1, batch.symbol}}, 0};
  const auto gather = ir::set(row, {ir::AxisIndex::iterator(j)}, ir::get(data, {batch_row, ir::AxisIndex::iterator(j)}));
  const auto body = ir::seq({ir::for_loop(i, 0, 8, ir::set(tmp, at0, sum)), ir::set(out, at0, ir::get(tmp, at0)),
                             ir::for_loop(j, 0, 256, gather)});
  return {ir::LoweredRoutine{"sum_and_gather", body, {batch}}, {a, out, data, row}};
}

/// The mock library's log and its kernel declarations (it reads no parameter layout from the
/// compiled code: a test declares each kernel's argument count).
struct MockLog {
  const char* (*log)() = nullptr;
  void (*clear_log)() = nullptr;
  void (*declare_kernel)(const char* name, int arity) = nullptr;
};

class GraphRuns {
 public:
  struct Buffers {
    std::vector<std::unique_ptr<backends::Buffer>> owned;
    std::vector<backends::Buffer*> pointers;
  };

  GraphRuns(std::shared_ptr<backends::gpu::Device> device, codegen::GpuLanguage language, MockLog mock)
      : device_(std::move(device)), backend_(backends::make_gpu_backend(device_, language)), mock_(mock) {}

  /// summing_and_gathering under the GPU schedule, compiled with the current configuration.
  backends::gpu::GpuExecutable& compile() {
    backends::CompileRequest request = summing_and_gathering();
    request.routine = backend_->default_schedule(request.routine);
    executables_.push_back(backend_->compile(request));
    auto& exe = dynamic_cast<backends::gpu::GpuExecutable&>(*executables_.back());
    // Every argument is 8 bytes (a pointer or an int64_t): the count from each signature.
    static const std::regex signature(R"(__global__\s+void\s+(?:__launch_bounds__\([^)]*\)\s+)?(\w+)\(([^)]*)\))");
    int kernels = 0;
    for (std::sregex_iterator m(exe.source().begin(), exe.source().end(), signature), end; m != end; ++m, ++kernels) {
      const std::string params = (*m)[2];
      mock_.declare_kernel((*m)[1].str().c_str(),
                           params.empty() ? 0 : 1 + static_cast<int>(std::count(params.begin(), params.end(), ',')));
    }
    EXPECT_EQ(kernels, 2) << exe.source();
    return exe;
  }
  Buffers buffers() {
    Buffers b;
    for (std::size_t bytes : {8 * 4, 4, 4 * 256 * 4, 256 * 4}) {
      b.owned.push_back(backend_->allocate(bytes));
      b.pointers.push_back(b.owned.back().get());
    }
    return b;
  }
  /// What one run of `exe` on `b` launched, as the mock logged it, addresses by name.
  std::string run(backends::gpu::GpuExecutable& exe, const Buffers& b, std::int64_t batch) {
    mock_.clear_log();
    const std::int64_t statics[] = {batch};
    exe.run(b.pointers, statics);
    device_->synchronize();
    std::map<std::string, std::string> names;
    const char* kNames[] = {"a", "out", "data", "row"};
    for (std::size_t k = 0; k < b.pointers.size(); ++k) {
      std::ostringstream hex;
      hex << std::hex << device_->graph_key(*b.pointers[k]).first;
      names[hex.str()] = kNames[k];
    }
    std::istringstream in(mock_.log());
    std::ostringstream out;
    std::string word;
    while (in >> word) {
      // Heap addresses are long; static values and sizes are short.
      if (word.size() >= 8 && word.find_first_not_of("0123456789abcdef") == std::string::npos && !names.contains(word))
        names[word] = "scratch" + std::to_string(names.size() - b.pointers.size());
      out << (names.contains(word) ? names[word] : word) << (in.peek() == '\n' ? "\n" : " ");
    }
    return out.str();
  }
  /// The same run of a copy of the routine compiled with gpu_graphs=off.
  std::string direct_run(const Buffers& b, std::int64_t batch) {
    config::set_override("gpu_graphs", "off");
    backends::gpu::GpuExecutable& direct = compile();
    config::clear_overrides();
    std::string log = run(direct, b, batch);
    EXPECT_EQ(direct.graph_builds(), 0u);
    return log;
  }
  const std::shared_ptr<backends::gpu::Device>& device() const { return device_; }

 private:
  std::shared_ptr<backends::gpu::Device> device_;
  std::shared_ptr<backends::Backend> backend_;
  MockLog mock_;
  std::vector<std::unique_ptr<backends::Executable>> executables_;
};

}  // namespace cannl::test_gpu
