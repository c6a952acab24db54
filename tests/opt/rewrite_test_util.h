#pragma once
// Helpers of the rewrite-pass tests: run a routine on fresh memory filled by a callback and read
// one node back, so a test compares the rewritten routine with the original on the interpreter.
//
//   auto before = run_and_read<float>(r, fill, out);  auto after = run_and_read<float>(r2, fill, out);

#include <functional>

#include "../interp/test_memory.h"
#include "cannl/ir/loop_ir.h"

namespace cannl::opt::testing {

using Fill = std::function<void(interp::testing::TestMemory&)>;

/// Runs `r` with every node it touches (and `extra`) allocated (zeroed, then `fill`) and returns `out`'s cells.
template <class T>
std::vector<T> run_and_read(const ir::LoweredRoutine& r, const Fill& fill, const ir::NodeRef& out,
                            std::vector<ir::NodeRef> extra = {}, std::vector<std::int64_t> statics = {}) {
  interp::testing::TestMemory mem;
  for (const auto& n : ir::nodes_of(r.body)) mem.add(n);
  for (const auto& n : extra) mem.add(n);  // nodes a rewrite may have stopped reading
  mem.add(out);
  fill(mem);
  interp::run(r, mem.buffers(), statics);
  return mem.read<T>(out);
}

inline ir::LoweredRoutine routine_of(ir::StmtRef body, std::vector<ir::StaticSymbol> statics = {}) {
  return ir::LoweredRoutine{"test", std::move(body), std::move(statics)};
}

}  // namespace cannl::opt::testing
