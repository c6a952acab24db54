#pragma once
// The global inference environment (semantics-frontend.md 3.1-3.2): variable solutions, pending
// constraints with their origins, pending steps and shapes. Internal to src/shape/.

#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "cannl/ir/tensor_node.h"
#include "cannl/shape/einsum_spec.h"
#include "cannl/shape/shape.h"

namespace cannl::shape {

/// What an error message needs to say where a constraint came from.
struct Origin {
  std::string op_name;
  std::vector<ShapeRef> shapes;  // result first, then operands
  std::string spec;              // einsum spec, if any
  int step_id = -1;
};
using OriginRef = std::shared_ptr<const Origin>;

enum class ConstraintKind { DimEq, RowEq, DimIneq, RowIneq, AtLeast, TotalElems, Terminal, Affine,
                            Concat };

/// One constraint. Ineq: `r1 ⊑ r2` / `d1 ⊑ d2` (result refines operand). AtLeast: `d1 >= n`.
/// TotalElems: product of `rows` == n. Terminal: `rows` belong to a leaf (param if is_param).
/// Affine (2.7): `d1` (the indexed axis) relates to `d2` (over) and `d3` (kernel, if has_kernel)
/// by stride/dilation/use_padding. Concat (2.8): `d1` == sum of `parts`.
struct Constraint {
  ConstraintKind kind = ConstraintKind::DimEq;
  Dim d1, d2;
  Row r1, r2;
  std::vector<Row> rows;
  std::int64_t n = 0;
  Dim d3;
  bool has_kernel = false;
  std::int64_t stride = 1, dilation = 1;
  bool use_padding = false;
  std::vector<Dim> parts;
  std::vector<bool> discardable;  // per part: may be guessed 0 when nothing else constrains it
  bool is_param = false;
  std::string param_name;
  OriginRef origin;
  // Set when kept as a residual: the variables it waits on. While none of them is bound it is a
  // fixed point of its own solving, so the driver leaves it alone (keeps inference incremental).
  std::vector<int> watch;
};
using ConstraintRef = std::shared_ptr<const Constraint>;

struct RowVarInfo {
  bool used_in_spec = false;  // appeared in an einsum/compose operand row: a param may not guess it
  bool is_template = false;   // minted by rank expansion: always safe to close empty
};

/// A capture of an einsum spec, bound to the spec's variable once the step is propagated.
struct CaptureBinding {
  VariableRef ref;
  int var = -1;
  bool is_row = false;
};

struct StepRecord {
  UpdateStep step;
  std::optional<EinsumSpec> spec;
  std::optional<ir::Projections> projections;
  bool pending = true;
  std::map<std::string, int> label_vars;  // einsum labels -> dim variables (sizes for projections)
  std::vector<Block> blocks;              // concatenation specs: one projection per live block
  std::vector<std::vector<ir::AxisPadding>> paddings;  // per operand (memory order); may be empty
  std::vector<CaptureBinding> captures;
  /// Set when the finish_inference that was to solve this step failed: the error it raised, so a
  /// later use of the step says why it has no projections (see `abandon_inference`).
  std::shared_ptr<const std::string> failure;
};

struct State {
  /// Counts `reset` calls (kept across them): shapes record it to be refused once stale.
  int generation = 0;
  int next_var = 0;
  int next_shape = 0;
  std::unordered_map<int, Dim> dim_solution;
  std::unordered_map<int, Row> row_solution;
  std::unordered_map<int, RowVarInfo> row_info;
  std::map<std::uint64_t, ConstraintRef> pending;  // by insertion sequence: deterministic order
  std::uint64_t next_seq = 0;
  std::unordered_map<int, std::vector<std::uint64_t>> watchers;  // variable -> residuals waiting on it
  std::deque<std::uint64_t> worklist;                             // constraints to (re)process
  std::vector<StepRecord> steps;
  std::vector<std::weak_ptr<Shape>> pending_shapes;
  std::unordered_map<int, std::vector<ir::AxisPadding>> shape_padding;  // by shape id; kept
  // Shapes whose padding a caller has read (buffers laid out with it): it may not grow later.
  std::set<int> padding_resolved;
  std::set<int> operand_shapes;
  // ids of pending shapes used as an operand (params count only then)
  /// Shapes of a failed finish_inference, by id: the error it raised. Such a shape may hold
  /// variables of the abandoned attempt, so it must not be read or used again.
  std::unordered_map<int, std::shared_ptr<const std::string>> failed_shapes;
  bool changed = false;

  /// Undo log of one propagate call, so a failing step leaves the state as it was.
  struct Trail {
    bool active = false;
    std::vector<int> dims, rows;
    std::vector<std::pair<int, std::optional<RowVarInfo>>> infos;
    std::vector<std::pair<std::uint64_t, ConstraintRef>> pending_log;  // null ref = inserted
  } trail;
};

State& state();
int fresh_var();
/// Adds `k` to the pending constraints: queued for solving when `process`, else a residual
/// waiting on its `watch` variables.
void add_pending(ConstraintRef k, bool process);
/// Removes and returns the pending constraint `seq` (null if gone).
ConstraintRef take_pending(std::uint64_t seq);
/// Queues the residuals waiting on `var` (called when it gets bound).
void wake(int var);
/// Rebuilds the watcher index from the pending constraints (after an undo).
void rebuild_watchers();
/// What undoing a trail must restore besides it (bindings, row infos, pending set).
struct Snapshot {
  int next_var;
  std::vector<int> added_operands;
};
/// Starts recording every binding, row info and pending change in the undo trail (which turns
/// off `subst`'s path compression until `end_step` or `restore`).
Snapshot begin_step();
/// Forgets the trail: what it recorded stays.
void end_step();
/// Undoes what the trail recorded since `begin_step`, then forgets it.
void restore(Snapshot snap);
/// Whether a (dim or row) variable is bound.
bool is_bound(int var);
/// The info of a row variable, for modification (recorded in the undo trail).
RowVarInfo& update_row_info(int var);
/// The info of a row variable (default when never set).
RowVarInfo row_info(int var);

/// Fully substitutes solved variables; closed rows keep all axes in `dims`.
Dim subst(const Dim& d);
Row subst(const Row& r);

/// Writes the current solution back into the rows of `shape`.
void write_back(Shape& shape);
/// `write_back` into the result and operands of `step`.
void write_back_step(const UpdateStep& step);

/// Adds one constraint outside any step (`set_dim`) and solves it at stage 1; on a throw the
/// inference state is left as it was.
void propagate_constraint(Constraint k);
/// Points the captures of a freshly propagated step at its variables.
void bind_captures(StepRecord& rec);
/// Records the solved values of a step's captures before the solutions are cleared.
void record_captures(StepRecord& rec);

}  // namespace cannl::shape
