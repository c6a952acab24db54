// Schedule traces: record, print, parse, replay (see trace.h). Each transform writes and reads
// its own arguments (transform_impls.h); this file has the format around them.
#include "cannl/schedule/trace.h"

#include <optional>
#include <sstream>
#include <type_traits>
#include <utility>
#include <variant>

#include "cannl/support/error.h"
#include "cannl/support/hash.h"
#include "schedule/transform_impls.h"

namespace cannl::schedule {

namespace {

constexpr std::string_view kHeader = "cannl-schedule 1";

// One step as text, naming loops in `r` (the routine the step applies to).
std::string print_step(const ir::LoweredRoutine& r, const Transform& transform) {
  return std::visit([&](const auto& t) {
    detail::StepWriter out(r, detail::trace_name(detail::Kind<std::decay_t<decltype(t)>>{}));
    detail::print_args(out, t);
    return out.line();
  }, transform);
}

// Parses the step into `out` when it names transform T.
template <class T>
bool parse_as(const detail::StepReader& in, const std::string& name, std::optional<Transform>& out) {
  if (name != detail::trace_name(detail::Kind<T>{})) return false;
  out = detail::parse_args(in, detail::Kind<T>{});
  return true;
}

template <std::size_t... I>
Transform parse_step(const detail::StepReader& in, std::index_sequence<I...>) {
  const std::string name = in.word(0);
  std::optional<Transform> out;
  (parse_as<std::variant_alternative_t<I, Transform>>(in, name, out) || ...);
  if (!out) in.bad("unknown transform '" + name + "'");
  return *out;
}

Transform parse_step(const ir::LoweredRoutine& r, const std::string& line) {
  return parse_step(detail::StepReader(r, line), std::make_index_sequence<std::variant_size_v<Transform>>{});
}

}  // namespace

std::string program_digest(const ir::LoweredRoutine& routine) {
  ir::LoweredRoutine unnamed = routine;
  unnamed.name = "routine";
  return sha256_hex(ir::print_loop_ir(unnamed));
}

ScheduleTrace record(const ir::LoweredRoutine& routine, const std::vector<Transform>& transforms) {
  ScheduleTrace trace{program_digest(routine), {}};
  ir::LoweredRoutine current = routine;
  for (std::size_t k = 0; k < transforms.size(); ++k) {
    const Transform& t = transforms[k];
    try {
      trace.steps.push_back(print_step(current, t));
    } catch (const InternalError& e) {
      // Which transform of the list, after which others: what a bug report needs (rethrown
      // without the prefix InternalError adds again).
      std::string what = e.what();
      const std::string prefix = InternalError("").what();
      if (what.rfind(prefix, 0) == 0) what.erase(0, prefix.size());
      std::string done;
      for (const auto& line : trace.steps) done += "\n  " + line;
      throw InternalError(what + " (transform " + std::to_string(k + 1) + " of " +
                          std::to_string(transforms.size()) + ", " + transform_name(t) + ", on routine '" +
                          routine.name + "' after:" + (done.empty() ? " none" : done) + ")");
    }
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
  for (const auto& line : trace.steps) current = schedule::apply(current, parse_step(current, line));
  return current;
}

}  // namespace cannl::schedule
