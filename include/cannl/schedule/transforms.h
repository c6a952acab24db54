#pragma once
// Schedule transforms as values (semantics-backend.md 8.2). A transform names loops by their
// index symbol and is applied as a pure function loop IR -> loop IR; an invalid reference or a
// transform that would change the results throws ScheduleError (the loop nest printed with the
// offending loop marked and the legal alternatives).
//
//   Split s = split(i, 4);                       // mints s.outer and s.inner
//   ir::LoweredRoutine r2 = apply(r, s);
//   r2 = apply(r2, Retype{s.outer, ir::AxisType::Grid});
//
// Each transform's rewrite, trace name and trace arguments live in one file,
// src/schedule/<name>.cpp (see src/schedule/transform_impls.h for adding one).

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "cannl/ir/loop_ir.h"

namespace cannl::schedule {

/// i -> outer * factor + inner, outer in [0, ceil(N / factor)), inner in [0, factor); a remainder
/// guard `If (outer*factor + inner < end)` wraps the body when factor does not divide the extent.
/// The loop must start at 0 and 1 <= factor <= extent.
struct Split {
  ir::Symbol axis;
  std::int64_t factor = 1;
  ir::Symbol outer, inner;  // fresh symbols (minted by `split`)
  ir::AxisType outer_type = ir::AxisType::Serial;
  ir::AxisType inner_type = ir::AxisType::Serial;
};
/// Interchanges a perfect nest `for outer: for inner: body` (the inner loop is outer's whole body).
struct Swap { ir::Symbol outer, inner; };
/// Sets the axis type of a loop. Non-Serial types are checked by the legality oracle: proven
/// conflicts are rejected; Vectorized also accepts a recognized reduction (re-association).
struct Retype { ir::Symbol axis; ir::AxisType type = ir::AxisType::Serial; };
/// Unrolled annotation, or (materialize) the body copied once per iteration with the index
/// replaced by a constant, so simplify and CSE see the copies. Materializing needs extent <= 64.
struct Unroll { ir::Symbol axis; bool materialize = false; };
/// Extends a loop starting at 0 to the next multiple of `to_multiple_of`; each leaf statement
/// of the body is guarded by `If (axis < old end)`, so pad iterations do nothing (always legal).
struct Pad { ir::Symbol axis; std::int64_t to_multiple_of = 1; };
/// Replaces the perfect serial nest of loops i, j, k (any nesting order) around one store
/// d[.., i, j] = add(d[.., i, j], mul(a[.., i, k], b[.., k, j])) (or the fma form) by a TileMma
/// whose fallback is the nest.
/// `fold` names loops of the perfect nest enclosing i, j, k (all of them, from the nest's top down
/// to the three) that the tile absorbs by role: rows (in d and a only), columns (in d and b only)
/// or reduction steps (in a and b only); see TileMma. d's index must be injective over all rows
/// and columns, folded or not (a renderer gives each cell its own accumulator), and folding keeps
/// each cell's steps in nest order: bitwise the nest.
struct Tensorize {
  ir::Symbol i, j, k;
  std::vector<ir::Symbol> fold = {};
};
/// Turns every whole-node ZeroOut of `node_id` into a loop nest of stores of 0 over every cell
/// (fresh loops, one per axis; padding included), so the zeroing can be annotated.
struct ExpandZero { int node_id = -1; };
/// A reduction loop `for r: d[idx] = accum(d[idx], v)` (d's index free of r, accum add/max/min)
/// becomes a deterministic two-pass reduction: one partial per contiguous block of r (a local
/// per block, `num_blocks` <= 16, blocks materialized), then a fixed balanced-tree combine of the
/// partials into d. Re-associates: deterministic per schedule, not bitwise the serial loop.
/// Interleaved form (`lanes` > 0, made by `split_reduce_lanes`): a fresh partials node p[lanes]
/// (one row of it per iteration of each enclosing Grid loop) set to the neutral, then
///   for q: for lane in [0, lanes): p[lane] = accum(p[lane], v(begin + q*lanes + lane))
/// and the tail r = begin + q_end*lanes + lane in order into the first lanes, then a fixed
/// balanced-tree combine of p into d. The lane loops (of type `lane_type`) are elementwise, so
/// Vectorized needs no licence and every backend computes the same bits as the interpreter.
struct SplitReduce {
  ir::Symbol axis;
  std::int64_t num_blocks = 2;
  std::int64_t lanes = 0;  // 0: the blocked form
  ir::Symbol lane;         // the main lane loop's fresh symbol (interleaved form)
  ir::AxisType lane_type = ir::AxisType::Serial;
};

/// CPU packing copy: inside loop `anchor`, reads of node `source_id` (all with one index, none
/// guarded, the node not written there) go through a fresh tile node `<source>_tile` spanning the
/// reads' bounding box over the loops inside the anchor, copied at the top of the anchor's body.
/// Hoisted: the routine writes the source nowhere, and instead of a copy per anchor iteration
/// every tile is packed once, out of the routine, into `<source>_packed` (one axis per loop
/// around the anchor that the reads mention, then the tile's axes): an ir::PackedOperand the
/// runtime fills before the first run and again only after the source changes. Parallel loops
/// around the anchor are then allowed (nothing is written per call); the anchor may not sit under
/// a guard, and the reads may not depend on a static index.
struct Stage {
  int source_id = -1;
  ir::Symbol anchor;
  bool hoisted = false;
};
/// Index-set splitting: loop [b, e) becomes consecutive segment loops [b, p1), [p1, p2), ...,
/// [pn, e) over copies of the body (fresh symbols), so each segment's guards can fold.
/// `segment_loops`: per segment, the symbols of its copied loops in the order a copy meets them
/// (the segment's loop first), minted by `partition` so that later transforms of the same plan
/// and a trace recorded from the list name the segments' loops; empty: apply mints them.
struct Partition {
  ir::Symbol axis;
  std::vector<std::int64_t> breakpoints;
  std::vector<std::vector<ir::Symbol>> segment_loops = {};
};

/// Keeps the one cell of node `node_id` that serial loop `over` reads and writes in a scalar local
/// for the loop's duration (declared and loaded before it, stored back after it).
struct Privatize { int node_id = -1; ir::Symbol over; };

/// Moves the elementwise consumer of node `target_id` (the first statement after loop `anchor`,
/// in the same sequence, touching it; its outermost loop spanning the anchor's range) into the
/// anchor's body after the accumulation, its outer index replaced by the anchor's:
///   for i: c[i, ..] += ..;  for r: out[r, j] = relu(c[r, j] + b[j])
///   =>  for i: { c[i, ..] += ..;  for j: out[i, j] = relu(c[i, j] + b[j]) }
/// Legal when the consumer reads only target cells its own anchor iteration finished and shares no
/// other written cell with other anchor iterations or the statements it moves above. The
/// reference's `shared` flag has no meaning here: under a Grid anchor the tail runs in the same
/// chunk anyway. Split the consumer like the anchor first to fuse into a chunk loop.
struct FuseEpilogue { int target_id = -1; ir::Symbol anchor; };
/// The perfect nest under `top` around one accumulation d[idx] = d[idx] + v (or fma(x, y, d))
/// accumulates into a fresh node p (one axis per `keep` loop, in keep order: p's layout; keep
/// must hold every nest loop d's index mentions), zeroed first, then a second nest adds p into d
/// in keep order.
/// Re-associates each cell's sum (licensed like Swap's reductions): p is injective over its
/// loops, so a shared store (a convolution's input gradient) becomes a tile folding all its
/// cells, and a kept reduction loop gives independent partials. `keep` may also name loops
/// enclosing `top`: p gets an axis for each (first), so their iterations fill and add disjoint
/// partials (a parallel chunk loop around the staging), and the scatter stays inside them.
/// `scatter`: the loops of the second nest, one per kept loop of the nest, minted by whoever plans the
/// transform (stage_partials_scatter) so that later transforms of the same plan and a trace
/// recorded from the list name the same loops; empty: apply mints them.
/// `zero`: likewise the loops of the nest zeroing one iteration's partials (with kept enclosing
/// loops; else p is zeroed whole).
struct StagePartials {
  ir::Symbol top;
  std::vector<ir::Symbol> keep;
  std::vector<ir::Symbol> scatter = {};
  std::vector<ir::Symbol> zero = {};
};
/// Fresh symbols for the scatter and zeroing loops of `t` (one each per kept loop: call it before
/// adding loops enclosing the top to `keep`).
StagePartials with_scatter_loops(StagePartials t);

/// A scatter over sliding windows becomes a gather (a convolution's input gradient becomes the
/// transposed convolution): in the perfect Serial nest under `top` around one matmul update
/// d[.., o + k + c, ..] += a[.., o + c', ..] * b[.., k, ..] (or the fma form), each pair (o, k)
/// of `windows` (a cell loop o and a window loop k, each of coefficient 1 in one axis of d that
/// holds nothing else; o read by one operand only, at an axis it spans whole; k not read by that
/// operand) is rewritten with o standing for d's axis: o keeps its symbol and runs over
/// [o.begin + k.begin, o.end + k.end - 1), and the operand is read at o - k through a fresh
/// zero-bordered copy `<a>_windowed` (zeroed, then filled with a; each windowed axis grows by
/// the window minus 1 on both sides). d's store becomes injective over the cell loops, so the
/// nest tiles like a forward convolution. Each cell sums its updates in a new order, and adds
/// products of the zero border (0 * b: NaN where b is infinite, where the scatter adds nothing):
/// licensed like StagePartials.
struct GatherWindows {
  ir::Symbol top;
  std::vector<std::pair<ir::Symbol, ir::Symbol>> windows;  // (cell loop o, window loop k)
};

/// Buckets the scatters under loop `top` by their target row: a fresh loop `bucket` over
/// [0, buckets) encloses `top`, and each SetDynamic under it (its node's runtime axis of extent
/// V, width = ceil(V / buckets)) runs only in the bucket holding its row, under the guard
///   If (width*bucket - 1 < row && row < width*bucket + width)   (f64, the scatter's own row)
/// Each update still happens once, and each cell's updates in their order: bitwise the nest.
/// The nest under `top` may hold only Serial loops, guards, comments and scatters whose rows,
/// values and guards read no node the nest writes (it runs once per bucket); 1 <= buckets <= V.
/// The buckets write disjoint rows, which the legality oracle proves from the guard: the bucket
/// loop (of type `bucket_type`, checked like a Retype) may run in parallel even though the rows
/// repeat (an embedding gradient's repeated token ids).
struct BucketScatter {
  ir::Symbol top;
  std::int64_t buckets = 2;
  ir::Symbol bucket;  // fresh (minted by `bucket_scatter`)
  ir::AxisType bucket_type = ir::AxisType::Serial;
};

using Transform = std::variant<Split, Swap, Retype, Unroll, Pad, Tensorize, ExpandZero, SplitReduce,
                               Stage, Partition, Privatize, FuseEpilogue, StagePartials, GatherWindows,
                               BucketScatter>;

/// Smart constructors minting the fresh symbols the transform introduces.
///   Split s = split(i, 4, ir::AxisType::Grid);  // then address s.outer / s.inner
Split split(ir::Symbol axis, std::int64_t factor, ir::AxisType outer_type = ir::AxisType::Serial,
            ir::AxisType inner_type = ir::AxisType::Serial);
/// The BucketScatter of the nest `top` into `buckets` row ranges, minting the bucket loop.
///   BucketScatter b = bucket_scatter(top, 16, ir::AxisType::Grid);  // then address b.bucket
BucketScatter bucket_scatter(ir::Symbol top, std::int64_t buckets, ir::AxisType bucket_type = ir::AxisType::Serial);
/// The Partition of `loop` at `breakpoints`, minting the symbols of every segment's loops.
///   Partition p = partition(loop, {head});  // then address p.segment_loops[1][0], the tail's loop
Partition partition(const ir::For& loop, std::vector<std::int64_t> breakpoints);
/// The interleaved SplitReduce of `axis` over `lanes` partials.
///   SplitReduce t = split_reduce_lanes(r, 64, ir::AxisType::Vectorized);  // then t.lane
SplitReduce split_reduce_lanes(ir::Symbol axis, std::int64_t lanes, ir::AxisType lane_type = ir::AxisType::Serial);

/// A routine with the transforms that made it from its input: what a default schedule returns so
/// that the tuner can record it as a trace and replay it (schedule::record).
struct ScheduledRoutine {
  ir::LoweredRoutine routine;
  std::vector<Transform> transforms;  // applied in order to the input routine
};

/// Applies one transform. Throws ScheduleError when the loop is missing or the transform illegal.
ir::LoweredRoutine apply(const ir::LoweredRoutine& routine, const Transform& transform);
/// Applies transforms left to right.
ir::LoweredRoutine apply(const ir::LoweredRoutine& routine, const std::vector<Transform>& transforms);

/// The transform's name as traces spell it: "split", "swap", ...
std::string transform_name(const Transform& transform);

}  // namespace cannl::schedule
