#pragma once
// Tracing (semantics-backend.md 4.3): the structural facts about every node a routine touches
// that placement decisions need, computed once from the lowered code. Decision-independent.
//
//   Trace t = trace_routine(routine);
//   t.nodes.at(h->id).recurrent   // read before the routine defines it: state across runs
//
// Statement positions: a routine body is a tree of Seq blocks; its "statements" are the non-Seq
// leaves of that tree in program order (lowering emits one per fill and per loop nest).

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "cannl/ir/loop_ir.h"

namespace cannl::opt {

/// A perfect loop nest around one store, the only writer form that can be inlined:
///   for i0: for i1: n[i0] = ...
struct LoopNest {
  std::vector<const ir::For*> loops;  // outermost first
  const ir::Set* store = nullptr;
};
/// The nest `stmt` is, or nullopt (a ZeroOut, a guarded store, several stores, ...).
std::optional<LoopNest> as_loop_nest(const ir::StmtRef& stmt);

/// One read of a node outside its own computation.
struct ReadSite {
  std::size_t statement = 0;
  /// How often one cell is read by this site per execution of the statement (bound).
  std::int64_t multiplicity = 1;
  /// The statement is an inlinable writer of this node id (the read is inside its computation).
  int inside_writer_of = -1;
  bool dynamic = false;  // GetDynamic: the row is a run-time value
};

struct NodeFacts {
  ir::NodeRef node;
  std::vector<std::size_t> writers;  // statements writing the node
  std::vector<ReadSite> reads;       // not counting an accumulation's read of its own cell
  bool recurrent = false;            // some read happens before the routine fully defines it
  /// 0, or why the writers cannot be inlined (a provenance code) with a readable reason.
  int not_inlinable = 0;
  std::string not_inlinable_why;
  bool simple = true;            // writers store constants, indices or plain copies
  bool scalar_constexpr = false; // one cell, computed from constants only
  /// Largest trip count of the loops a writer's store index does not bind (reductions).
  std::int64_t reduction_trip = 1;
  std::set<int> reads_nodes;     // nodes its writers read (for the fan-in cap)

  bool written() const { return !writers.empty(); }
  bool read() const { return !reads.empty(); }
};

struct Trace {
  std::vector<ir::StmtRef> statements;
  std::map<int, NodeFacts> nodes;
  std::vector<int> order;  // node ids in first-occurrence order
};

/// Traces a routine (statics are the only symbols code may use without binding them).
///   trace_routine(r).nodes.at(x->id).read_only()
Trace trace_routine(const ir::LoweredRoutine& routine);

/// Calls `f` on every statement (non-Seq leaf) in program order.
void for_each_statement(const ir::StmtRef& body, const std::function<void(const ir::StmtRef&)>& f);
/// Rebuilds `body` with every statement replaced by `f(statement)` (nullptr drops it); Seq
/// blocks are kept, empty ones dropped.
ir::StmtRef map_statements(const ir::StmtRef& body,
                           const std::function<ir::StmtRef(const ir::StmtRef&)>& f);

}  // namespace cannl::opt
