// Writing and reading a transform's arguments in a trace line (see trace_step.h).
#include "schedule/trace_step.h"

#include <sstream>

#include "cannl/support/error.h"
#include "schedule/loop_tree.h"

namespace cannl::schedule::detail {

namespace {

const ir::AxisType kAxisTypes[] = {ir::AxisType::Serial, ir::AxisType::Grid, ir::AxisType::Workgroup,
                                   ir::AxisType::WorkgroupReduce, ir::AxisType::Unrolled, ir::AxisType::Vectorized};

}  // namespace

StepWriter& StepWriter::loop(ir::Symbol s) {
  const std::string name = loop_name(r_.body, s);
  internal_check(name != "?", "schedule trace: a transform names a loop missing from its routine");
  return word(name);
}

StepWriter& StepWriter::node(int node_id) {
  const auto nodes = ir::nodes_of(r_.body);
  for (std::size_t k = 0; k < nodes.size(); ++k)
    if (nodes[k]->id == node_id) return word("n" + std::to_string(k));
  return word("n?");
}

StepWriter& StepWriter::integer(std::int64_t v) { return word(std::to_string(v)); }

StepWriter& StepWriter::axis_type(ir::AxisType t) { return word(ir::axis_type_name(t)); }

StepWriter& StepWriter::word(std::string_view w) {
  line_ += ' ';
  line_ += w;
  return *this;
}

StepReader::StepReader(const ir::LoweredRoutine& r, const std::string& line) : r_(r), line_(line) {
  std::istringstream in(line);
  for (std::string w; in >> w;) words_.push_back(w);
}

void StepReader::bad(const std::string& why) const {
  throw ScheduleError("schedule trace step '" + line_ + "': " + why);
}

std::string StepReader::word(std::size_t k) const {
  if (k >= words_.size()) bad("missing argument " + std::to_string(k));
  return words_[k];
}

ir::Symbol StepReader::loop(std::size_t k) const {
  const auto s = loop_named(r_.body, word(k));
  if (!s) bad("no loop " + word(k) + " in routine '" + r_.name + "' (" +
              std::to_string(canonical_loops(r_.body).size()) + " loops)");
  return *s;
}

int StepReader::node(std::size_t k) const {
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

std::int64_t StepReader::integer(std::size_t k) const {
  try {
    std::size_t used = 0;
    const std::int64_t v = std::stoll(word(k), &used);
    if (used == word(k).size()) return v;
  } catch (const std::exception&) {
  }
  bad("'" + word(k) + "' is not an integer");
}

ir::AxisType StepReader::axis_type(std::size_t k) const {
  for (const auto t : kAxisTypes)
    if (ir::axis_type_name(t) == word(k)) return t;
  bad("unknown axis type '" + word(k) + "'");
}

}  // namespace cannl::schedule::detail
