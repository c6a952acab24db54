#pragma once
// Taking back what linking a routine did to a context, so that Context::compile is all or
// nothing: a compile that fails after its routine was linked (a buffer over the memory budget, a
// queued failure surfacing at a host-init upload, a packing fill that fails) leaves no buffers and
// no initialized marks of its nodes behind, and a later compile starts from the same context.
//
//   LinkUndo undo(state, {data.params, data.inputs, data.outputs});
//   try { link_buffers(state, data); } catch (...) { undo.roll_back(); throw; }

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <span>
#include <vector>

#include "runtime/context_state.h"

namespace cannl::runtime {

class LinkUndo {
 public:
  /// Remembers, for every node of `node_lists`, what the context holds of it now.
  LinkUndo(ContextState& state, std::initializer_list<std::span<const ir::NodeRef>> node_lists);
  /// Frees the buffers linking allocated and takes back the marks its uploads made. Marks of
  /// nodes that held a value before stay as they are now: a queued failure that surfaced while
  /// linking rightly forgot some of them (ContextState::wait_for_device).
  void roll_back();

 private:
  /// One node's entries in the context before linking.
  struct Before {
    ir::NodeRef node;
    bool had_buffer = false;
    bool initialized = false;
    bool written_from_outside = false;
    std::optional<std::uint64_t> write_count;
    std::optional<backends::Event> queued_write;
  };
  void restore_marks(const Before& before);

  ContextState& state_;
  std::vector<Before> nodes_;
};

}  // namespace cannl::runtime
