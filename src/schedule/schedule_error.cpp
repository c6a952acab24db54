// ScheduleError messages (see schedule_error.h).
#include "schedule/schedule_error.h"

#include <sstream>
#include <vector>

#include "cannl/support/error.h"
#include "schedule/loop_tree.h"

namespace cannl::schedule::detail {

namespace {

constexpr std::size_t kContextLines = 12;  // lines shown before and after the marked loop

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

}  // namespace

std::string name_of(const ir::LoweredRoutine& routine, ir::Symbol s) {
  return loop_name(routine.body, s);
}

std::string marked_nest(const ir::LoweredRoutine& routine, ir::Symbol loop) {
  const std::string name = name_of(routine, loop);
  const auto lines = lines_of(ir::print_loop_ir(routine));
  std::size_t mark = lines.size();
  for (std::size_t k = 0; k < lines.size() && name != "?"; ++k) {
    const auto at = lines[k].find("for " + name + " in [");
    const auto tile = lines[k].find("tile_mma");
    if ((at != std::string::npos && lines[k].find_first_not_of(' ') == at) ||
        (tile != std::string::npos && lines[k].find(" " + name + " in [") != std::string::npos)) {
      mark = k;
      break;
    }
  }
  const std::size_t from = mark == lines.size() ? 0 : (mark > kContextLines ? mark - kContextLines : 0);
  const std::size_t to = mark == lines.size() ? std::min(lines.size(), 2 * kContextLines)
                                              : std::min(lines.size(), mark + kContextLines + 1);
  std::string out;
  if (from > 0) out += "     ...\n";
  for (std::size_t k = from; k < to; ++k) out += (k == mark ? "  >> " : "     ") + lines[k] + "\n";
  if (to < lines.size()) out += "     ...\n";
  return out;
}

void throw_schedule_error(const ir::LoweredRoutine& routine, ir::Symbol loop,
                          const std::string& action, const std::string& problem,
                          const std::string& alternatives) {
  std::string message = action + ": " + problem + "\n  in routine '" + routine.name +
                        "' (offending loop marked >>):\n" + marked_nest(routine, loop);
  message += "  legal alternatives: " + (alternatives.empty() ? std::string("none") : alternatives);
  throw ScheduleError(message);
}

}  // namespace cannl::schedule::detail
