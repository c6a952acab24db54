// The optimization pipeline: the only place that orders the passes (semantics-backend.md 4.2):
//   trace + placement -> virtualize -> cleanup -> write-once -> simplify -> one-hot -> CSE -> hoist.
// Each pass is timed (debug >= 1, which also verifies the IR after it) and dumped before/after
// (debug >= 2: build_files/<exe>/<routine>.<NN>-<pass>.ll, decisions in a header comment).
#include <cstdio>
#include <functional>
#include <sstream>

#include "cannl/ir/verify.h"
#include "cannl/opt/optimize.h"
#include "cannl/support/config.h"
#include "cannl/support/files.h"
#include "cannl/support/log.h"
#include "opt/cleanup.h"
#include "opt/cse.h"
#include "opt/hoist.h"
#include "opt/one_hot.h"
#include "opt/placement.h"
#include "opt/provenance.h"
#include "opt/simplify.h"
#include "opt/trace.h"
#include "opt/virtualize.h"
#include "opt/write_once.h"

namespace cannl::opt {

namespace {

std::string decisions_text(const std::map<int, Decision>& decisions, const Trace* trace) {
  std::ostringstream out;
  for (const auto& [id, d] : decisions) {
    std::string name = "n" + std::to_string(id);
    if (trace && trace->nodes.contains(id)) name = trace->nodes.at(id).node->debug_name() + " (" + name + ")";
    out << "# " << name << ": " << describe_decision(d) << "\n";
  }
  return out.str();
}

class Runner {
 public:
  Runner(Optimized& out, bool record) : out_(out), record_(record) {}

  void dump(const std::string& pass, const Trace* trace) {
    if (logging::debug_level() < 2) return;
    char number[8];
    std::snprintf(number, sizeof number, "%02d", step_);
    const auto path = files::build_dir() / (out_.routine.name + "." + number + "-" + pass + ".ll");
    files::write_atomically(path, decisions_text(out_.decisions, trace) + ir::print_loop_ir(out_.routine));
  }

  void pass(const std::string& name, const std::function<ir::LoweredRoutine()>& run,
            const Trace* trace) {
    ++step_;
    {
      logging::ScopedTimer timer("opt " + name + " " + out_.routine.name);
      out_.routine = run();
    }
    if (logging::debug_level() >= 1) ir::verify(out_.routine);
    if (record_) out_.passes.emplace_back(name, out_.routine);
    dump(name, trace);
  }

 private:
  Optimized& out_;
  bool record_;
  int step_ = 0;
};

Optimized unoptimized(const ir::LoweredRoutine& routine) {
  Optimized out{routine, {}};
  for (const auto& n : ir::nodes_of(routine.body))
    out.decisions[n->id] = {Placement::OnDevice, provenance::kOptimizeOff, "optimize=false"};
  return out;
}

}  // namespace

Optimized optimize(const ir::LoweredRoutine& routine, const PassContext& ctx, bool enabled) {
  if (!enabled) return unoptimized(routine);
  Optimized out{routine, {}};
  Runner runner(out, ctx.record_passes);
  runner.dump("lowered", nullptr);
  Trace trace;
  Placements placements;
  runner.pass("placement", [&] {
    trace = trace_routine(out.routine);
    placements = decide_placements(trace, ctx);
    out.decisions = placements.decisions;
    return out.routine;
  }, &trace);
  runner.pass("virtualize", [&] {
    return virtualize(out.routine, trace, placements.virtual_candidates);
  }, &trace);
  runner.pass("cleanup", [&] {
    auto r = cleanup_virtual(out.routine, trace, placements, ctx);
    out.decisions = placements.decisions;
    return r;
  }, &trace);
  runner.pass("write_once", [&] { return assign_written_once(out.routine); }, &trace);
  runner.pass("simplify", [&] { return simplify(out.routine, ctx); }, &trace);
  runner.pass("one_hot", [&] { return rewrite_one_hot_reductions(out.routine, ctx); }, &trace);
  runner.pass("cse", [&] { return eliminate_common_subexpressions(out.routine, ctx); }, &trace);
  runner.pass("hoist", [&] { return hoist_cross_statement_cse(out.routine, ctx); }, &trace);
  return out;
}

Optimized optimize(const ir::LoweredRoutine& routine, const PassContext& ctx) {
  return optimize(routine, ctx, config::get_bool("optimize"));
}

}  // namespace cannl::opt
