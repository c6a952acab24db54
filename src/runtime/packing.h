#pragma once
// Packed operands (ir::PackedOperand, made by a hoisted Stage): their fills compiled as one routine
// of their own beside the routine that reads them, and run before it only when a source changed
// since the last packing (link time included), never per call.
//
//   std::optional<Packing> packing = compile_packing(state, routine, target);
//   if (packing) refresh_packing(state, *packing);   // before each run of the routine

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "cannl/backends/backend.h"
#include "cannl/ir/loop_ir.h"
#include "runtime/context_state.h"

namespace cannl::runtime {

struct Packing {
  std::unique_ptr<backends::Executable> executable;
  std::vector<ir::NodeRef> params;        // the fills' buffers: sources and packed nodes
  std::vector<ir::NodeRef> sources;
  std::vector<std::uint64_t> packed_at;   // the sources' write counts at the last packing
  bool packed = false;                    // whether the fills ever ran
};

/// The fills of `routine.packed` compiled as routine `<name>_pack` on the context's backend, under
/// its default schedule; nullopt when the routine packs nothing.
std::optional<Packing> compile_packing(ContextState& state, const ir::LoweredRoutine& routine,
                                       const std::optional<ir::Target>& target);

/// Whether the fills never ran, a source was written since they last did, or a source may be
/// written in place by the host (Context::host_storage handed it out).
bool needs_refresh(const ContextState& state, const Packing& packing);

/// Runs the fills when needs_refresh says so; allocates the packed
/// buffers. The sources must be initialized (the caller checks the routine's inputs first).
void refresh_packing(ContextState& state, Packing& packing);

/// Whether every source of `packing` holds data (so it can be packed at link time).
bool sources_initialized(const ContextState& state, const Packing& packing);

}  // namespace cannl::runtime
