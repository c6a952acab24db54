// Constructors of loop-IR values and the dtype of a scalar.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>

#include "cannl/ir/loop_ir.h"
#include "cannl/support/error.h"

namespace cannl::ir {

DType scalar_dtype(const Scalar& s) {
  struct Visitor {
    DType operator()(const Constant& c) const { return c.dtype; }
    DType operator()(const ConstantBits& c) const { return c.dtype; }
    DType operator()(const Get& g) const { return g.node->dtype; }
    DType operator()(const LocalScope& l) const { return l.dtype; }
    DType operator()(const GetLocal& l) const { return l.dtype; }
    DType operator()(const EmbedIndex&) const { return DType::I64; }
    DType operator()(const Apply& a) const { return a.dtype; }
    DType operator()(const GetDynamic& g) const { return g.node->dtype; }
  };
  return std::visit(Visitor{}, s.node);
}

ScalarRef constant(double value, DType dtype) {
  return std::make_shared<const Scalar>(Scalar{Constant{value, dtype}});
}
ScalarRef constant_bits(std::int64_t bits, DType dtype) {
  return std::make_shared<const Scalar>(Scalar{ConstantBits{bits, dtype}});
}
ScalarRef get(NodeRef node, std::vector<AxisIndex> index) {
  internal_check(node != nullptr, "get: null node");
  return std::make_shared<const Scalar>(Scalar{Get{std::move(node), std::move(index)}});
}
ScalarRef embed_index(AxisIndex index) {
  return std::make_shared<const Scalar>(Scalar{EmbedIndex{std::move(index)}});
}
ScalarRef apply(Op op, DType dtype, std::vector<ScalarRef> args) {
  internal_check(static_cast<int>(args.size()) == op_arity(op),
                 [&] { return "apply: wrong argument count for " + std::string(op_name(op)); });
  return std::make_shared<const Scalar>(Scalar{Apply{op, dtype, std::move(args)}});
}
ScalarRef local_scope(int scope_id, DType dtype, StmtRef body) {
  return std::make_shared<const Scalar>(Scalar{LocalScope{scope_id, dtype, std::move(body)}});
}
ScalarRef get_local(int scope_id, DType dtype) {
  return std::make_shared<const Scalar>(Scalar{GetLocal{scope_id, dtype}});
}
ScalarRef get_dynamic(NodeRef node, std::vector<AxisIndex> index, int dyn_axis, ScalarRef dyn_value) {
  internal_check(node != nullptr && dyn_value != nullptr, "get_dynamic: null node or value");
  return std::make_shared<const Scalar>(
      Scalar{GetDynamic{std::move(node), std::move(index), dyn_axis, std::move(dyn_value)}});
}

StmtRef seq(std::vector<StmtRef> stmts) {
  return std::make_shared<const Stmt>(Stmt{Seq{std::move(stmts)}});
}
StmtRef comment(std::string text) {
  return std::make_shared<const Stmt>(Stmt{Comment{std::move(text)}});
}
StmtRef for_loop(Symbol index, std::int64_t begin, std::int64_t end, StmtRef body, AxisType axis) {
  return std::make_shared<const Stmt>(Stmt{For{index, begin, end, std::move(body), axis}});
}

std::string_view axis_type_name(AxisType type) {
  switch (type) {
    case AxisType::Serial: return "serial";
    case AxisType::Grid: return "grid";
    case AxisType::Workgroup: return "workgroup";
    case AxisType::WorkgroupReduce: return "workgroup_reduce";
    case AxisType::Unrolled: return "unrolled";
    case AxisType::Vectorized: return "vectorized";
  }
  return "?";
}
StmtRef zero_out(NodeRef node) {
  return std::make_shared<const Stmt>(Stmt{ZeroOut{std::move(node)}});
}
StmtRef set(NodeRef node, std::vector<AxisIndex> index, ScalarRef value, std::string comment) {
  return std::make_shared<const Stmt>(
      Stmt{Set{std::move(node), std::move(index), std::move(value), std::move(comment)}});
}
StmtRef set_local(int scope_id, ScalarRef value) {
  return std::make_shared<const Stmt>(Stmt{SetLocal{scope_id, std::move(value)}});
}
StmtRef declare_local(int scope_id, DType dtype, bool needs_init) {
  return std::make_shared<const Stmt>(Stmt{DeclareLocal{scope_id, dtype, needs_init}});
}
StmtRef if_then(ScalarRef condition, StmtRef body) {
  return std::make_shared<const Stmt>(Stmt{If{std::move(condition), std::move(body)}});
}
StmtRef set_dynamic(NodeRef node, std::vector<AxisIndex> index, int dyn_axis, ScalarRef dyn_value,
                    ScalarRef value, Op accum, std::string comment) {
  internal_check(node != nullptr && dyn_value != nullptr && value != nullptr,
                 "set_dynamic: null node or value");
  return std::make_shared<const Stmt>(
      Stmt{SetDynamic{std::move(node), std::move(index), dyn_axis, std::move(dyn_value),
                      std::move(value), accum, std::move(comment)}});
}

StmtRef barrier() { return std::make_shared<const Stmt>(Stmt{Barrier{}}); }

std::vector<const TileAxis*> TileMma::axes() const {
  std::vector<const TileAxis*> out = {&i, &j, &k};
  for (const auto* group : {&outer_i, &outer_j, &outer_k})
    for (const TileAxis& x : *group) out.push_back(&x);
  return out;
}

namespace {
std::int64_t extent_product(const TileAxis& inner, const std::vector<TileAxis>& outer) {
  std::int64_t n = inner.extent();
  for (const TileAxis& x : outer) n *= x.extent();
  return n;
}
}  // namespace

std::int64_t TileMma::rows() const { return extent_product(i, outer_i); }
std::int64_t TileMma::cols() const { return extent_product(j, outer_j); }
std::int64_t TileMma::steps() const { return extent_product(k, outer_k); }

std::int64_t TileMma::blocks() const {
  if (!blocking.blocked()) return 1;
  return ((rows() + blocking.bm - 1) / blocking.bm) * ((cols() + blocking.bn - 1) / blocking.bn);
}

bool TileBlocking::valid() const {
  const bool scalar = bm > 0 && bn > 0 && bk > 0 && tm > 0 && tn > 0 && bm % tm == 0 && bn % tn == 0;
  if (async_copy && !copies_unconverted()) return false;
  if (!tensor_cores()) return scalar;
  // ldmatrix .x4 loads two 8-column MMA tiles of B at once: whole pairs per warp.
  return scalar && tm % 16 == 0 && tn % 16 == 0 && bk % mma_steps() == 0;
}

int TileBlocking::mma_steps() const {
  switch (mma) {
    case NarrowFormat::None: return 0;
    case NarrowFormat::BF16:
    case NarrowFormat::F16: return 16;
    case NarrowFormat::TF32: return 8;
  }
  return 0;
}

std::int64_t TileBlocking::mma_slice_elements(std::int64_t cells) const {
  // Eight elements of padding (16 bytes of 16-bit ones) shift consecutive rows by four banks;
  // tf32 slices along the steps take four, so the lanes' (row, step) loads spread over all banks.
  const std::int64_t along_steps = cells * (bk + (mma == NarrowFormat::TF32 ? 4 : 8));
  const std::int64_t along_cells = std::int64_t{bk} * (cells + 8);
  return std::max(along_steps, along_cells);
}

std::int64_t TileBlocking::shared_bytes(std::int64_t element_bytes) const {
  if (!blocked()) return 0;
  const std::int64_t stages = async_copy ? 2 : 1;
  if (tensor_cores()) return stages * (mma_slice_elements(bm) + mma_slice_elements(bn)) * mma_element_bytes();
  if (async_copy) return stages * (async_pitch(bm) + async_pitch(bn)) * bk * element_bytes;
  return (padded_rows() + padded_cols()) * bk * element_bytes;
}

std::vector<StmtRef> flatten_seq(const StmtRef& s) {
  const auto* q = std::get_if<Seq>(&s->node);
  if (!q) return {s};
  std::vector<StmtRef> out;
  for (const auto& x : q->stmts) {
    const auto inner = flatten_seq(x);
    out.insert(out.end(), inner.begin(), inner.end());
  }
  return out;
}

bool mentions(const std::vector<AxisIndex>& index, Symbol s) {
  return std::any_of(index.begin(), index.end(), [&](const AxisIndex& i) { return i.mentions(s); });
}

std::int64_t flat_stride(const TensorNode& node, const std::vector<AxisIndex>& index, Symbol s) {
  std::int64_t stride = 0, axis_stride = 1;
  for (std::size_t ax = index.size(); ax-- > 0;) {
    for (const auto& term : index[ax].terms)
      if (term.symbol == s) stride += term.coeff * axis_stride;
    axis_stride *= node.dims[ax];
  }
  return stride;
}

bool distinct_cells(const TensorNode& node, const std::vector<AxisIndex>& index, const std::vector<TileAxis>& loops) {
  std::vector<std::pair<std::int64_t, std::int64_t>> steps;  // |stride|, extent
  for (const TileAxis& x : loops)
    if (x.extent() > 1) steps.emplace_back(std::abs(flat_stride(node, index, x.symbol)), x.extent());
  std::sort(steps.begin(), steps.end());
  std::int64_t reach = 0;  // the largest offset the smaller strides reach
  for (const auto& [stride, extent] : steps) {
    if (stride <= reach) return false;
    reach += stride * (extent - 1);
  }
  return true;
}

StmtRef tile_mma(TileMma tile) {
  internal_check(tile.fallback != nullptr && tile.d.node && tile.a.node && tile.b.node,
                 "tile_mma: null fallback or operand");
  internal_check(!tile.blocking.blocked() || tile.blocking.valid(), "tile_mma: an invalid GPU blocking");
  return std::make_shared<const Stmt>(Stmt{std::move(tile)});
}

std::vector<AxisIndex> with_dynamic_row(std::vector<AxisIndex> index, int dyn_axis, std::int64_t row) {
  internal_check(dyn_axis >= 0 && static_cast<std::size_t>(dyn_axis) < index.size(),
                 "with_dynamic_row: axis out of range");
  index[static_cast<std::size_t>(dyn_axis)] = AxisIndex::fixed(row);
  return index;
}

// NaN fails every comparison, so it is rejected too.
std::int64_t dynamic_row(double value, std::int64_t extent) {
  if (!(value >= 0) || !(value < static_cast<double>(extent))) return -1;
  if (value != std::trunc(value)) return -1;
  return static_cast<std::int64_t>(value);
}

int fresh_scope_id() {
  static std::atomic<int> next{1};
  return next++;
}

}  // namespace cannl::ir
