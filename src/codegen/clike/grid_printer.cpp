// Grid loops on the CPU: contiguous chunks of the index range, one `#pragma omp parallel for`
// iteration each, on OpenMP's persistent pool (reference 5.4, "Intra-kernel CPU parallelism").
//
// Chunk c covers [begin + extent*c/chunks, begin + extent*(c+1)/chunks): every iteration runs
// exactly once, on one thread, in increasing order inside its chunk; a cell written under the
// loop is written by one iteration only (checked below), so results equal serial execution bit
// for bit whatever the chunk or thread count.
#include <algorithm>
#include <map>
#include <set>

#include "codegen/clike/body_printer.h"

namespace cannl::codegen {

namespace {

// Ranges [begin, end) of the loops (and matmul tile axes) inside a Grid loop, by symbol id.
using LoopRanges = std::map<int, std::pair<std::int64_t, std::int64_t>>;

// True when some axis of `index` is `c*s + rest` where rest (over loops inside the Grid loop,
// everything else fixed during it) spans less than |c|: then distinct values of `s` address
// disjoint cells, so iterations of a loop over `s` never write the same cell.
//   d[i0, j] (c = 1, rest 0) and d[64*i0 + i1] with i1 in [0, 64) separate i0.
bool separates(const std::vector<ir::AxisIndex>& index, ir::Symbol s, const LoopRanges& ranges) {
  for (const auto& at : index) {
    std::int64_t c = 0;
    std::int64_t span = 0;
    bool known = true;
    for (const auto& term : at.terms) {
      if (term.symbol == s) {
        c += term.coeff;
        continue;
      }
      auto r = ranges.find(term.symbol.id);
      if (r == ranges.end()) continue;  // constant while the Grid loop runs
      if (r->second.second <= r->second.first) continue;
      const std::int64_t mag = term.coeff < 0 ? -term.coeff : term.coeff;
      span += mag * (r->second.second - 1 - r->second.first);
      known = known && mag < (std::int64_t{1} << 31);
    }
    if (known && c != 0 && span < (c < 0 ? -c : c)) return true;
  }
  return false;
}

// Why a Grid loop over `grid` must stay serial, or "" when its iterations write disjoint cells
// and share no scalar local: the annotator asserts independence, this re-checks what is cheap so
// a wrong annotation degrades to serial code rather than a race.
struct GridCheck {
  ir::Symbol grid;
  std::set<int> declared;  // scalar locals declared inside the loop (private per iteration)
  std::string why;
  LoopRanges ranges;

  void fail(const std::string& reason) {
    if (why.empty()) why = reason;
  }
  void scalar(const ir::ScalarRef& s) {
    if (const auto* l = std::get_if<ir::LocalScope>(&s->node)) {
      declared.insert(l->scope_id);
      stmt(l->body);
    } else if (const auto* a = std::get_if<ir::Apply>(&s->node)) {
      for (const auto& x : a->args) scalar(x);
    } else if (const auto* g = std::get_if<ir::GetDynamic>(&s->node)) {
      scalar(g->dyn_value);
    }
  }
  void stmt(const ir::StmtRef& s) {
    std::visit([&](const auto& x) { visit(x); }, s->node);
  }
  void visit(const ir::Seq& q) {
    for (const auto& x : q.stmts) stmt(x);
  }
  void visit(const ir::For& f) {
    ranges[f.index.id] = {f.begin, f.end};
    stmt(f.body);
  }
  void visit(const ir::If& i) {
    scalar(i.condition);
    stmt(i.body);
  }
  void visit(const ir::Set& s) {
    if (!separates(s.index, grid, ranges)) fail("a write to " + s.node->debug_name() + " does not depend on the grid index");
    scalar(s.value);
  }
  void visit(const ir::SetLocal& s) {
    if (declared.count(s.scope_id) == 0) fail("a scalar local declared outside the loop is written in it");
    scalar(s.value);
  }
  void visit(const ir::DeclareLocal& d) { declared.insert(d.scope_id); }
  void visit(const ir::ZeroOut& z) { fail("the whole of " + z.node->debug_name() + " is zeroed in it"); }
  void visit(const ir::SetDynamic&) { fail("it scatters to rows known only at run time"); }
  void visit(const ir::TileMma& t) {
    for (const ir::TileAxis* a : {&t.i, &t.j, &t.k}) ranges[a->symbol.id] = {a->begin, a->end};
    if (!separates(t.d.index, grid, ranges)) fail("a matmul tile's output does not depend on the grid index");
  }
  void visit(const ir::Comment&) {}
  void visit(const ir::Barrier&) {}
};

}  // namespace

bool BodyPrinter::print_grid(const ir::For& f, const std::string& name) {
  if (in_parallel_) return false;
  // A Grid split of a matmul's rows: one call over every row shares the packed B panels and
  // spreads the row panels over the whole team (same cells, same per-cell order).
  if (const auto* t = std::get_if<ir::TileMma>(&f.body->node)) {
    if (auto whole = merge_grid_rows(f, *t); whole && print_tile_mma(*whole, zero_tiles_.contains(t))) return true;
  }
  if (!options_.openmp_grid || f.end - f.begin < 2) return false;
  GridCheck check{f.index, {}, {}, {}};
  check.stmt(f.body);
  if (!check.why.empty()) {
    line("/* Grid loop kept serial: " + check.why + ". */");
    return false;
  }
  const std::int64_t extent = f.end - f.begin;
  const std::string chunk = "i" + std::to_string(next_loop_++);
  const std::string count = "i" + std::to_string(next_loop_++);
  line("{");
  ++indent_;
  const std::int64_t fixed = options_.grid_chunks > 0 ? std::min<std::int64_t>(options_.grid_chunks, extent) : 0;
  line("const int64_t " + count + " = " +
       (fixed > 0 ? std::to_string(fixed) : "cannl_grid_chunks(" + std::to_string(extent) + ", 0)") + ";");
  line("#pragma omp parallel for schedule(static)" +
       (options_.threads > 0 ? " num_threads(" + std::to_string(options_.threads) + ")" : std::string()));
  line("for (int64_t " + chunk + " = 0; " + chunk + " < " + count + "; ++" + chunk + ") {");
  ++indent_;
  const std::string e = std::to_string(extent);
  const std::string b = f.begin == 0 ? "" : std::to_string(f.begin) + " + ";
  in_parallel_ = true;
  print_serial_loop(f, name, b + e + " * " + chunk + " / " + count,
                    b + e + " * (" + chunk + " + 1) / " + count);
  in_parallel_ = false;
  --indent_;
  line("}");
  --indent_;
  line("}");
  return true;
}

}  // namespace cannl::codegen
