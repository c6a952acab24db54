// Placement decisions (see placement.h): fixed rules first, then the caps applied to a fixed
// point. Demoting a candidate only lowers the others' costs, so starting from "everything private
// is a candidate" and demoting until nothing changes terminates and never over-inlines.
#include "opt/placement.h"

#include <functional>
#include <optional>

#include "opt/provenance.h"

namespace cannl::opt {

using ir::MemoryMode;

Decision stored_private(const ir::TensorNode& node, const PassContext& ctx, int code,
                        const std::string& why) {
  const auto bytes = static_cast<std::int64_t>(node.size_in_bytes());
  const bool fits = ctx.stack_threshold_bytes <= 0 || bytes <= ctx.stack_threshold_bytes;
  if (fits) return {Placement::Local, code, why + "; local: " + std::to_string(bytes) + " bytes"};
  return {Placement::OnDevice, code,
          why + "; on device: " + std::to_string(bytes) + " bytes > stack_threshold_in_bytes"};
}

namespace {

using provenance::kDeclaredIntent;

/// The decision the fixed rules make, or nullopt for a virtual candidate.
std::optional<Decision> fixed_rule(const NodeFacts& f, const PassContext& ctx) {
  const ir::TensorNode& n = *f.node;
  const std::string intent(ir::memory_mode_name(n.mode));
  if (n.mode == MemoryMode::Materialized || n.mode == MemoryMode::OnDevice)
    return Decision{Placement::OnDevice, kDeclaredIntent, "declared " + intent};
  if (n.host_init) return Decision{Placement::OnDevice, provenance::kHostInit, "host-init data"};
  if (ctx.persistent_nodes.contains(n.id))
    return Decision{Placement::OnDevice, provenance::kLineage, "the context already holds it"};
  if (!f.written()) return Decision{Placement::OnDevice, provenance::kReadOnly, "read-only input"};
  if (f.recurrent)
    return Decision{Placement::OnDevice, provenance::kRecurrent, "read before written (recurrent)"};
  if (!f.read()) return Decision{Placement::OnDevice, provenance::kOutput, "written, never read here"};
  if (n.mode == MemoryMode::NeverVirtual || n.mode == MemoryMode::DeviceOnly ||
      n.mode == MemoryMode::Local)
    return stored_private(n, ctx, kDeclaredIntent, "declared " + intent);
  if (n.is_padded()) return stored_private(n, ctx, provenance::kPadded, "padded");
  if (f.not_inlinable != 0) return stored_private(n, ctx, f.not_inlinable, f.not_inlinable_why);
  return std::nullopt;
}

constexpr std::int64_t kHuge = std::int64_t{1} << 40;

std::int64_t saturating_mul(std::int64_t a, std::int64_t b) {
  if (a != 0 && b > kHuge / a) return kHuge;
  return a * b;
}

class Caps {
 public:
  Caps(const Trace& t, const std::set<int>& candidates) : t_(t), c_(candidates) {}

  std::int64_t visits(int id) { return memo(visits_, id, [&] {
    std::int64_t total = 0;
    for (const auto& r : t_.nodes.at(id).reads) {
      const std::int64_t outer = c_.contains(r.inside_writer_of) ? visits(r.inside_writer_of) : 1;
      total = std::min(kHuge, total + saturating_mul(r.multiplicity, outer));
    }
    return total;
  }); }

  std::int64_t cost(int id) { return memo(cost_, id, [&] {
    const NodeFacts& f = t_.nodes.at(id);
    std::int64_t inner = 1;
    for (int m : f.reads_nodes)
      if (m != id && c_.contains(m)) inner = std::max(inner, cost(m));
    return saturating_mul(f.reduction_trip, inner);
  }); }

  /// The last statement at which the node's value is needed: its own reads, and for reads inside
  /// the computation of another candidate, that candidate's last read (where it gets inlined).
  std::int64_t last_read(int id) { return memo(last_read_, id, [&] {
    std::int64_t last = -1;
    for (const auto& r : t_.nodes.at(id).reads) {
      const bool nested = c_.contains(r.inside_writer_of);
      last = std::max(last, nested ? last_read(r.inside_writer_of)
                                   : static_cast<std::int64_t>(r.statement));
    }
    return last;
  }); }

  /// A stored node the computation reads that is written after the computation starts and no
  /// later than its last read: inlining would read the new value. Returns its id, or -1.
  int changed_input(int id) {
    const NodeFacts& f = t_.nodes.at(id);
    if (f.writers.empty()) return -1;
    const auto first = static_cast<std::int64_t>(f.writers.front());
    const std::int64_t last = last_read(id);
    for (int m : f.reads_nodes) {
      if (m == id || c_.contains(m)) continue;
      for (std::size_t w : t_.nodes.at(m).writers)
        if (static_cast<std::int64_t>(w) > first && static_cast<std::int64_t>(w) <= last) return m;
    }
    return -1;
  }

  std::string name(int id) const { return t_.nodes.at(id).node->debug_name(); }

  std::set<int> fanin(int id) {
    std::set<int> out, seen;
    collect_fanin(id, out, seen);
    return out;
  }

 private:
  const Trace& t_;
  const std::set<int>& c_;
  std::map<int, std::int64_t> visits_, cost_, last_read_;
  std::set<int> busy_;

  // A cycle between candidates counts as unbounded (the candidates get demoted).
  std::int64_t memo(std::map<int, std::int64_t>& m, int id, const std::function<std::int64_t()>& f) {
    if (auto it = m.find(id); it != m.end()) return it->second;
    if (!busy_.insert(id).second) return kHuge;
    const std::int64_t v = f();
    busy_.erase(id);
    return m[id] = v;
  }
  void collect_fanin(int id, std::set<int>& out, std::set<int>& seen) {
    if (!seen.insert(id).second) return;
    for (int m : t_.nodes.at(id).reads_nodes) {
      if (m == id) continue;
      if (c_.contains(m)) collect_fanin(m, out, seen);
      else out.insert(m);
    }
  }
};

/// The visit cap (depends on consumers: checked consumers first).
std::optional<Decision> visit_rule(const NodeFacts& f, Caps& caps, const PassContext& ctx) {
  if (f.scalar_constexpr || f.simple) return std::nullopt;
  const std::int64_t visits = caps.visits(f.node->id);
  if (visits <= ctx.max_visits) return std::nullopt;
  return stored_private(*f.node, ctx, provenance::kVisitCap,
                        "a cell is read up to " + std::to_string(visits) +
                            " times > virtualize_max_visits");
}

/// The recompute-cost and fan-in caps (depend on producers: checked producers first).
std::optional<Decision> cost_rule(const NodeFacts& f, Caps& caps, const PassContext& ctx) {
  if (f.scalar_constexpr) return std::nullopt;
  const int id = f.node->id;
  if (const int m = caps.changed_input(id); m >= 0)
    return stored_private(*f.node, ctx, provenance::kInputChanges,
                          "it reads " + caps.name(m) + ", which is rewritten before its last read");
  const std::int64_t cost = caps.cost(id);
  if (cost > ctx.max_inline_reduction)
    return stored_private(*f.node, ctx, provenance::kReductionCap,
                          "inlining replays reductions of " + std::to_string(cost) +
                              " iterations > virtualize_max_inline_reduction");
  const auto fanin = caps.fanin(id).size();
  if (static_cast<std::int64_t>(fanin) > ctx.max_inline_fanin)
    return stored_private(*f.node, ctx, provenance::kFaninCap,
                          "inlined it would read " + std::to_string(fanin) +
                              " stored nodes > virtualize_max_inline_fanin");
  return std::nullopt;
}

using Rule = std::optional<Decision> (*)(const NodeFacts&, Caps&, const PassContext&);

/// Demotes candidates breaking `rule`, one at a time (each demotion changes the others'
/// costs), visiting ids in the given order, until none breaks it.
template <typename Ids>
void demote_until_stable(const Trace& trace, const Ids& ids, Rule rule, const PassContext& ctx,
                         Placements& p) {
  for (bool changed = true; changed;) {
    changed = false;
    Caps caps(trace, p.virtual_candidates);
    for (int id : ids) {
      if (!p.virtual_candidates.contains(id)) continue;
      if (auto d = rule(trace.nodes.at(id), caps, ctx)) {
        p.decisions[id] = *d;
        p.virtual_candidates.erase(id);
        changed = true;
        break;
      }
    }
  }
}

}  // namespace

Placements decide_placements(const Trace& trace, const PassContext& ctx) {
  Placements p;
  for (int id : trace.order) {
    const NodeFacts& f = trace.nodes.at(id);
    if (auto d = fixed_rule(f, ctx)) p.decisions[id] = *d;
    else p.virtual_candidates.insert(id);
  }
  // Demotions only lower other candidates' visits and costs, so visits (consumers first)
  // then costs (producers first) reach a fixed point that breaks no cap.
  const std::vector<int> reversed(trace.order.rbegin(), trace.order.rend());
  demote_until_stable(trace, reversed, visit_rule, ctx, p);
  demote_until_stable(trace, trace.order, cost_rule, ctx, p);
  for (int id : p.virtual_candidates) {
    const bool constexpr_scalar = trace.nodes.at(id).scalar_constexpr;
    p.decisions[id] = {Placement::Virtual,
                       constexpr_scalar ? provenance::kScalarConstexpr : provenance::kInlined,
                       constexpr_scalar ? "scalar computed from constants" : "inlined at every read"};
  }
  return p;
}

}  // namespace cannl::opt
