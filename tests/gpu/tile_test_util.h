#pragma once
// The GPU tile tests' reference: a routine run on the interpreter from values made per node.
//
//   auto expected = interpreted(r, params, awkward_values);   // the bytes of every param after

#include <functional>
#include <vector>

#include "../interp/test_memory.h"
#include "backends/run_util.h"
#include "cannl/interp/interpreter.h"

namespace cannl::gpu_test {

/// The bytes of every param after running `r` on the interpreter, each param filled by `values`.
inline std::vector<test_util::Bytes> interpreted(const ir::LoweredRoutine& r, const std::vector<ir::NodeRef>& params,
                                                 const std::function<std::vector<float>(const ir::NodeRef&)>& values) {
  interp::testing::TestMemory mem;
  for (const auto& n : params) {
    mem.add(n);
    mem.fill(n, values(n));
  }
  interp::Buffers buffers = mem.buffers();
  interp::run(r, buffers, {});
  std::vector<test_util::Bytes> out;
  for (const auto& n : params) out.push_back(mem.read<std::byte>(n));
  return out;
}

}  // namespace cannl::gpu_test
