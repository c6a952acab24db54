#pragma once
// The Assignments IR: accumulating assignments over tensor nodes (semantics-backend.md 3.2).
//
//   lhs[P_lhs] accum= op(rhs_1[P_1], ..., rhs_n[P_n])      over the projections' product space
//
// With `initialize_neutral` the LHS is first reset to the accumulator's neutral element, unless the
// projection writes every cell exactly once (then it is a plain store).
//
//   Asgn a = accum_binop(Op::Add, /*init=*/true, c, Op::Mul, a_node, b_node, proj);   // c = a.b

#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "cannl/ir/indexing.h"
#include "cannl/ir/loop_ir.h"
#include "cannl/ir/ops.h"
#include "cannl/ir/tensor_node.h"

namespace cannl::ir {

/// One argument of the right-hand side: a node read at its projection, or a constant.
struct Operand {
  NodeRef node;          // null for a constant
  double constant = 0;   // used when node is null

  static Operand of(NodeRef n) { return {std::move(n), 0}; }
  static Operand literal(double c) { return {nullptr, c}; }
  bool is_constant() const { return node == nullptr; }
};

struct RhsExpr;
using RhsExprRef = std::shared_ptr<const RhsExpr>;

/// A scalar expression over the operands of an AccumOp, for right-hand sides that need more than
/// one op (gradient rules such as `g * (1 - t*t)`).
///   RhsExpr::apply(Op::Mul, {RhsExpr::arg(0), RhsExpr::apply(Op::Sub, {RhsExpr::constant(1), ...})})
struct RhsExpr {
  enum class Kind { Arg, Constant, Apply };
  Kind kind = Kind::Arg;
  int arg = 0;          // Kind::Arg: index into AccumOp::args
  double value = 0;     // Kind::Constant
  Op op = Op::Identity; // Kind::Apply
  std::vector<RhsExprRef> children;

  static RhsExprRef argument(int index);
  static RhsExprRef constant(double value);
  static RhsExprRef apply(Op op, std::vector<RhsExprRef> children);
  std::string to_string(const std::vector<std::string>& arg_names) const;
};

/// lhs[P_lhs] accum= op(args...). args.size() == op_arity(op); projections.project_rhs has one entry
/// per argument (empty for constants). When `expr` is set, the right-hand side is that expression
/// over the args instead of op(args...) (then `op` is ignored).
struct AccumOp {
  NodeRef lhs;
  Op accum = Op::Arg2;          // Arg2 = plain overwrite
  bool initialize_neutral = false;
  Op op = Op::Identity;
  std::vector<Operand> args;
  Projections projections;
  RhsExprRef expr;              // optional general right-hand side
};

/// Initializers (semantics-backend.md 3.2 `fetch_op`).
struct FetchConstant { double value = 0; };
struct FetchConstantBits { std::int64_t bits = 0; };   // exact bits, e.g. for uint4x32
struct FetchConstantFill { std::vector<double> values; }; // row-major logical values
struct FetchRangeOverOffsets {};                         // cell := its logical row-major offset
/// Copy of the parent's row at a runtime static index (the leading axis of `parent` is dropped).
struct FetchSlice { StaticSymbol batch_index; NodeRef parent; };
/// cell := the runtime value of a static symbol.
struct FetchEmbedSymbol { StaticSymbol symbol; };

using FetchOp = std::variant<FetchConstant, FetchConstantBits, FetchConstantFill,
                             FetchRangeOverOffsets, FetchSlice, FetchEmbedSymbol>;

struct Fetch {
  NodeRef node;
  FetchOp op;
};

struct Asgn;
using AsgnRef = std::shared_ptr<const Asgn>;

/// A named block: names routines and sections of generated code.
struct BlockComment {
  std::string text;
  std::vector<AsgnRef> body;
};

/// Code written directly in the loop IR, for a fused op whose algorithm is no product space
/// (attention's online softmax keeps a running maximum and sum per row). Lowering emits `body`
/// as it is: its loop symbols are its own, its indices address unpadded nodes. `writes` are the
/// nodes it writes, every cell of each unless the node is also in `reads` (then it accumulates
/// onto the values there); `reads` the nodes it reads.
struct LoopCode {
  std::string label;
  std::vector<NodeRef> reads;
  std::vector<NodeRef> writes;
  StmtRef body;
};

struct Asgn {
  std::variant<AccumOp, Fetch, BlockComment, LoopCode> node;
};

/// A compilable unit: a sequence of assignments plus the static symbols it reads.
struct Comp {
  std::vector<AsgnRef> body;
  std::vector<StaticSymbol> statics;
};

AsgnRef make_accum(AccumOp op);
AsgnRef make_fetch(NodeRef node, FetchOp op);
AsgnRef make_block(std::string text, std::vector<AsgnRef> body);
/// A LoopCode statement; checks that the body is present.
AsgnRef make_loop_code(LoopCode code);

/// Readable text, one statement per line, e.g. `c[i0, i1] =:+ a[i0, i2] * b[i2, i1]`.
std::string print_assignments(const Comp& comp);

/// One line for one accumulating assignment (no newline), as used in Set comments of lowered code:
///   print_accum_op(c = a.b) == "c[i3, i4] =:+ a[i3, i5] * b[i5, i4]   # ij,jk->ik"
std::string print_accum_op(const AccumOp& op);
/// One line for one fetch (no newline): "x := 0", "x := range_over_offsets", "x := [1, 2, 3]".
std::string print_fetch(const Fetch& fetch);
/// One line for loop code (no newline): "out, lse := loop code fused_attention(q, k, v)".
std::string print_loop_code(const LoopCode& code);
/// Text of a double for IR dumps: the shortest of %.15g/%.16g/%.17g that reads back exactly
/// ("3", "0.1", "-inf", "0.10000000149011612" for 0.1f).
std::string format_ir_number(double value);

/// Nodes the code reads before it fully initializes them (inputs of a routine), in first-use order.
std::vector<NodeRef> read_before_initialized(const Comp& comp);
/// Nodes the code writes, in first-write order.
std::vector<NodeRef> written_nodes(const Comp& comp);

}  // namespace cannl::ir
