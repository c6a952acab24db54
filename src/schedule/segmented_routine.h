#pragma once
// A routine held as the statements of its top-level sequence (its segments), for the default
// schedules: a nest's transforms look only at the nest, the loops around it and the routine's
// statics, so they are applied to the one segment that holds the nest. Each transform then
// costs that segment's size instead of the whole routine's, and the routine is reassembled
// only when the whole is asked for. The reassembled routine is the one applying the same
// transforms to the whole routine gives (same statements, same order, same sequence).
//
//   SegmentedRoutine s(routine);
//   for (std::size_t k = 0; k < s.size(); ++k) ... s.part(k) ...   // the routine with one segment
//   s.apply(*s.holder(loop), {Retype{loop, ir::AxisType::Grid}});    // throws ScheduleError as apply
//   ir::LoweredRoutine whole = s.whole();

#include <map>
#include <optional>
#include <vector>

#include "cannl/ir/loop_ir.h"
#include "cannl/schedule/transforms.h"

namespace cannl::schedule::detail {

class SegmentedRoutine {
 public:
  explicit SegmentedRoutine(const ir::LoweredRoutine& routine) { reset(routine); }

  /// Starts over from `routine` (after a transform that spans segments was applied to the whole).
  void reset(const ir::LoweredRoutine& routine);

  std::size_t size() const { return segments_.size(); }
  const ir::StmtRef& segment(std::size_t k) const { return segments_[k]; }
  /// The routine with segment k as its whole body (statics, packings and name kept).
  ir::LoweredRoutine part(std::size_t k) const;
  /// The segment binding loop `s` (or that bound it last), or nullopt when none ever did.
  std::optional<std::size_t> holder(ir::Symbol s) const;

  /// Applies `steps` in order to segment k alone; a ScheduleError leaves everything as it was.
  void apply(std::size_t k, const std::vector<Transform>& steps);

  /// The whole routine, reassembled when a segment changed since the last call.
  const ir::LoweredRoutine& whole() const;

 private:
  ir::LoweredRoutine shell_;             // everything but the body
  bool body_is_seq_ = false;             // the body is a Seq of the segments (else one segment)
  std::vector<ir::StmtRef> segments_;
  std::map<ir::Symbol, std::size_t> holder_;
  mutable std::optional<ir::LoweredRoutine> whole_;

  void index(std::size_t k);
};

}  // namespace cannl::schedule::detail
