// Schedule traces: record, print, parse, replay (see trace.h).
#include "cannl/schedule/trace.h"

#include <sstream>

#include "cannl/support/error.h"
#include "cannl/support/hash.h"
#include "schedule/loop_tree.h"

namespace cannl::schedule {

namespace {

constexpr std::string_view kHeader = "cannl-schedule 1";

const ir::AxisType kAxisTypes[] = {ir::AxisType::Serial, ir::AxisType::Grid, ir::AxisType::Workgroup,
                                   ir::AxisType::WorkgroupReduce, ir::AxisType::Unrolled, ir::AxisType::Vectorized};

std::string loop(const ir::LoweredRoutine& r, ir::Symbol s) {
  const std::string name = detail::loop_name(r.body, s);
  internal_check(name != "?", "schedule trace: a transform names a loop missing from its routine");
  return name;
}

std::string node_ref(const ir::LoweredRoutine& r, int node_id) {
  const auto nodes = ir::nodes_of(r.body);
  for (std::size_t k = 0; k < nodes.size(); ++k)
    if (nodes[k]->id == node_id) return "n" + std::to_string(k);
  return "n?";
}

// One step as text, naming loops in `r` (the routine the step applies to).
std::string print_step(const ir::LoweredRoutine& r, const Transform& transform) {
  const std::string name = transform_name(transform);
  return std::visit([&](const auto& t) -> std::string {
    using T = std::decay_t<decltype(t)>;
    if constexpr (std::is_same_v<T, Split>)
      return name + " " + loop(r, t.axis) + " " + std::to_string(t.factor) + " " +
             std::string(ir::axis_type_name(t.outer_type)) + " " + std::string(ir::axis_type_name(t.inner_type));
    else if constexpr (std::is_same_v<T, Swap>) return name + " " + loop(r, t.outer) + " " + loop(r, t.inner);
    else if constexpr (std::is_same_v<T, Retype>) return name + " " + loop(r, t.axis) + " " + std::string(ir::axis_type_name(t.type));
    else if constexpr (std::is_same_v<T, Unroll>) return name + " " + loop(r, t.axis) + (t.materialize ? " materialize" : " annotate");
    else if constexpr (std::is_same_v<T, Pad>) return name + " " + loop(r, t.axis) + " " + std::to_string(t.to_multiple_of);
    else if constexpr (std::is_same_v<T, Tensorize>) {
      std::string out = name + " " + loop(r, t.i) + " " + loop(r, t.j) + " " + loop(r, t.k);
      if (!t.fold.empty()) out += " fold";
      for (const ir::Symbol s : t.fold) out += " " + loop(r, s);
      return out;
    }
    else if constexpr (std::is_same_v<T, ExpandZero>) return name + " " + node_ref(r, t.node_id);
    else if constexpr (std::is_same_v<T, SplitReduce>)
      return name + " " + loop(r, t.axis) + " " +
             (t.lanes > 0 ? "lanes " + std::to_string(t.lanes) + " " + std::string(ir::axis_type_name(t.lane_type))
                          : std::to_string(t.num_blocks));
    else if constexpr (std::is_same_v<T, Stage>) return name + " " + node_ref(r, t.source_id) + " " + loop(r, t.anchor);
    else if constexpr (std::is_same_v<T, Privatize>) return name + " " + node_ref(r, t.node_id) + " " + loop(r, t.over);
    else if constexpr (std::is_same_v<T, FuseEpilogue>) return name + " " + node_ref(r, t.target_id) + " " + loop(r, t.anchor);
    else if constexpr (std::is_same_v<T, StagePartials>) {
      std::string out = name + " " + loop(r, t.top);
      for (const ir::Symbol s : t.keep) out += " " + loop(r, s);
      return out;
    }
    else {
      std::string out = name + " " + loop(r, t.axis);
      for (const auto p : t.breakpoints) out += " " + std::to_string(p);
      return out;
    }
  }, transform);
}

class StepParser {
 public:
  StepParser(const ir::LoweredRoutine& r, const std::string& line) : r_(r), line_(line) {
    std::istringstream in(line);
    for (std::string w; in >> w;) words_.push_back(w);
  }

  Transform parse() {
    const std::string op = word(0);
    if (op == "split") {
      Split s = split(loop_at(1), integer(2), axis_type(3), axis_type(4));
      return s;
    }
    if (op == "swap") return Swap{loop_at(1), loop_at(2)};
    if (op == "retype") return Retype{loop_at(1), axis_type(2)};
    if (op == "unroll") {
      if (word(2) != "materialize" && word(2) != "annotate") bad("expected materialize or annotate");
      return Unroll{loop_at(1), word(2) == "materialize"};
    }
    if (op == "pad") return Pad{loop_at(1), integer(2)};
    if (op == "tensorize") {
      Tensorize t{loop_at(1), loop_at(2), loop_at(3)};
      if (words_.size() > 4 && word(4) != "fold") bad("expected fold");
      for (std::size_t k = 5; k < words_.size(); ++k) t.fold.push_back(loop_at(k));
      return t;
    }
    if (op == "expand_zero") return ExpandZero{node_at(1)};
    if (op == "split_reduce" && word(2) == "lanes") return split_reduce_lanes(loop_at(1), integer(3), axis_type(4));
    if (op == "split_reduce") return SplitReduce{loop_at(1), integer(2)};
    if (op == "stage") return Stage{node_at(1), loop_at(2)};
    if (op == "privatize") return Privatize{node_at(1), loop_at(2)};
    if (op == "fuse_epilogue") return FuseEpilogue{node_at(1), loop_at(2)};
    if (op == "stage_partials") {
      StagePartials t{loop_at(1), {}};
      for (std::size_t k = 2; k < words_.size(); ++k) t.keep.push_back(loop_at(k));
      return t;
    }
    if (op == "partition") {
      Partition p{loop_at(1), {}};
      for (std::size_t k = 2; k < words_.size(); ++k) p.breakpoints.push_back(integer(k));
      return p;
    }
    bad("unknown transform '" + op + "'");
  }

 private:
  const ir::LoweredRoutine& r_;
  std::string line_;
  std::vector<std::string> words_;

  [[noreturn]] void bad(const std::string& why) const {
    throw ScheduleError("schedule trace step '" + line_ + "': " + why);
  }
  std::string word(std::size_t k) const {
    if (k >= words_.size()) bad("missing argument " + std::to_string(k));
    return words_[k];
  }
  ir::Symbol loop_at(std::size_t k) const {
    const auto s = detail::loop_named(r_.body, word(k));
    if (!s) bad("no loop " + word(k) + " in routine '" + r_.name + "' (" +
                std::to_string(detail::canonical_loops(r_.body).size()) + " loops)");
    return *s;
  }
  int node_at(std::size_t k) const {
    const std::string w = word(k);
    const auto nodes = ir::nodes_of(r_.body);
    std::size_t n = 0;
    try {
      n = w.size() > 1 && w[0] == 'n' ? std::stoul(w.substr(1)) : nodes.size();
    } catch (const std::exception&) {
      n = nodes.size();
    }
    if (n >= nodes.size()) bad("no node " + w + " in routine '" + r_.name + "'");
    return nodes[n]->id;
  }
  std::int64_t integer(std::size_t k) const {
    try {
      std::size_t used = 0;
      const std::int64_t v = std::stoll(word(k), &used);
      if (used == word(k).size()) return v;
    } catch (const std::exception&) {
    }
    bad("'" + word(k) + "' is not an integer");
  }
  ir::AxisType axis_type(std::size_t k) const {
    for (const auto t : kAxisTypes)
      if (ir::axis_type_name(t) == word(k)) return t;
    bad("unknown axis type '" + word(k) + "'");
  }
};

}  // namespace

std::string program_digest(const ir::LoweredRoutine& routine) {
  ir::LoweredRoutine unnamed = routine;
  unnamed.name = "routine";
  return sha256_hex(ir::print_loop_ir(unnamed));
}

ScheduleTrace record(const ir::LoweredRoutine& routine, const std::vector<Transform>& transforms) {
  ScheduleTrace trace{program_digest(routine), {}};
  ir::LoweredRoutine current = routine;
  for (const auto& t : transforms) {
    trace.steps.push_back(print_step(current, t));
    current = schedule::apply(current, t);
  }
  return trace;
}

std::string print_trace(const ScheduleTrace& trace) {
  std::string out = std::string(kHeader) + "\ndigest " + trace.digest + "\n";
  for (const auto& s : trace.steps) out += s + "\n";
  return out;
}

ScheduleTrace parse_trace(std::string_view text) {
  std::istringstream in{std::string(text)};
  std::string line;
  if (!std::getline(in, line) || line != kHeader)
    throw ScheduleError("schedule trace: the first line must be '" + std::string(kHeader) + "', got '" + line + "'");
  ScheduleTrace trace;
  if (!std::getline(in, line) || line.rfind("digest ", 0) != 0 || line.size() != 7 + 64)
    throw ScheduleError("schedule trace: the second line must be 'digest <64 hex digits>', got '" + line + "'");
  trace.digest = line.substr(7);
  while (std::getline(in, line))
    if (!line.empty()) trace.steps.push_back(line);
  return trace;
}

ir::LoweredRoutine replay(const ir::LoweredRoutine& routine, const ScheduleTrace& trace) {
  const std::string digest = program_digest(routine);
  if (digest != trace.digest)
    throw ScheduleError("schedule replay onto routine '" + routine.name + "': the program digest " +
                        digest.substr(0, 12) + "... differs from the trace's " + trace.digest.substr(0, 12) +
                        "...: the schedule was made for another program; record a schedule for this one");
  ir::LoweredRoutine current = routine;
  for (const auto& line : trace.steps) current = schedule::apply(current, StepParser(current, line).parse());
  return current;
}

}  // namespace cannl::schedule
