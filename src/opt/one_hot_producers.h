#pragma once
// Materialized one-hot selector nodes (private to src/opt, used by one_hot.cpp). When placement
// keeps a one-hot node in storage (it is read by the forward and the backward), the reductions
// read `eq[p, k]` instead of the selector itself. A top-level statement
//   for p, k: eq[p, k] = (k == ids[p])
// that writes every cell of `eq` once, is the only write of `eq` in the routine, and reads
// nodes the routine never writes, fixes eq's value for every later statement: a read eq[a, b]
// there stands for (b == ids[a]), so the one-hot rewrite can see through it.
//
//   SelectorProducers producers(top_level_statements);
//   match_one_hot(c, k, 0, n, producers.source_at(t));   // inside top-level statement t

#include <map>
#include <vector>

#include "cannl/ir/loop_ir.h"
#include "one_hot_match.h"

namespace cannl::opt {

class SelectorProducers {
 public:
  /// Finds the producers among the routine's top-level statements (in program order).
  explicit SelectorProducers(const std::vector<ir::StmtRef>& top);
  /// The reads that may be expanded inside top-level statement `t` (producers before it).
  ///   producers.source_at(3)(get(eq, {i, k}))  ->  identity<f32>(eq(index(k), ids[i]))
  SelectorSource source_at(std::size_t t) const;

 private:
  struct Producer {
    std::vector<ir::Symbol> axes;  // the loop symbol indexing each axis of the node
    ir::ScalarRef value;
    ir::DType dtype = ir::DType::F32;
    std::size_t at = 0;  // its top-level statement
  };
  std::map<int, Producer> producers_;  // by node id
};

}  // namespace cannl::opt
