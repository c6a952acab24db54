// SegmentedRoutine (see segmented_routine.h).
#include "schedule/segmented_routine.h"

#include "cannl/ir/tree_mapper.h"

namespace cannl::schedule::detail {

void SegmentedRoutine::reset(const ir::LoweredRoutine& routine) {
  shell_ = routine;
  shell_.body = nullptr;
  const auto* q = routine.body ? std::get_if<ir::Seq>(&routine.body->node) : nullptr;
  body_is_seq_ = q != nullptr;
  segments_ = q ? q->stmts : std::vector<ir::StmtRef>{routine.body};
  holder_.clear();
  for (std::size_t k = 0; k < segments_.size(); ++k) index(k);
  whole_ = routine;
}

void SegmentedRoutine::index(std::size_t k) {
  ir::for_each_stmt(segments_[k], [&](const ir::Stmt& s) {
    if (const auto* f = std::get_if<ir::For>(&s.node)) holder_[f->index] = k;
  });
}

ir::LoweredRoutine SegmentedRoutine::part(std::size_t k) const {
  ir::LoweredRoutine out = shell_;
  out.body = segments_[k];
  return out;
}

std::optional<std::size_t> SegmentedRoutine::holder(ir::Symbol s) const {
  // A loop a transform removed keeps its entry: transforms addressing it are refused in that
  // segment as they would be in the whole routine (no segment binds it any more).
  const auto it = holder_.find(s);
  if (it == holder_.end()) return std::nullopt;
  return it->second;
}

void SegmentedRoutine::apply(std::size_t k, const std::vector<Transform>& steps) {
  ir::LoweredRoutine out = schedule::apply(part(k), steps);
  segments_[k] = out.body;
  out.body = nullptr;
  shell_ = std::move(out);
  index(k);
  whole_.reset();
}

const ir::LoweredRoutine& SegmentedRoutine::whole() const {
  if (!whole_) {
    whole_ = shell_;
    whole_->body = body_is_seq_ ? ir::seq(segments_) : segments_.front();
  }
  return *whole_;
}

}  // namespace cannl::schedule::detail
