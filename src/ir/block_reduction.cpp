// Recognizing the cooperative block reduction form (block_reduction.h).
#include "cannl/ir/block_reduction.h"

#include <algorithm>
#include <cmath>

#include "cannl/ir/rewrite.h"
#include "cannl/ir/tree_mapper.h"

namespace cannl::ir {

namespace {

// Whether `s` reads `node`, or contains a local scope or a dynamic gather.
bool reads_or_opaque(const ScalarRef& s, const TensorNode& node) {
  return std::visit(
      [&](const auto& n) -> bool {
        using T = std::decay_t<decltype(n)>;
        if constexpr (std::is_same_v<T, Get>) return n.node->id == node.id;
        if constexpr (std::is_same_v<T, LocalScope> || std::is_same_v<T, GetDynamic> || std::is_same_v<T, GetLocal>) {
          return true;
        }
        if constexpr (std::is_same_v<T, Apply>) {
          for (const auto& a : n.args) {
            if (reads_or_opaque(a, node)) return true;
          }
        }
        return false;
      },
      s->node);
}

bool is_block_accum(Op op) { return op == Op::Add || op == Op::Mul || op == Op::Max || op == Op::Min; }

// `condition` as `before + r < bound` with r (the loop's index) at coefficient 1 and nowhere in
// `before`: a Split's remainder guard (schedule/split.cpp), compared exactly, in i64, with an
// integral bound (the renderer works the slice's extent out in int64).
std::optional<RowGuard> row_guard(const ScalarRef& condition, Symbol r) {
  constexpr double kExactIntegers = 9007199254740992.0;  // 2^53
  const auto* lt = std::get_if<Apply>(&condition->node);
  if (lt == nullptr || lt->op != Op::Cmplt || lt->dtype != DType::I64 || lt->args.size() != 2) return std::nullopt;
  const auto* lhs = std::get_if<EmbedIndex>(&lt->args[0]->node);
  const auto* rhs = std::get_if<Constant>(&lt->args[1]->node);
  if (lhs == nullptr || rhs == nullptr || rhs->dtype != DType::I64 || !(std::abs(rhs->value) < kExactIntegers) ||
      rhs->value != std::trunc(rhs->value)) {
    return std::nullopt;
  }
  RowGuard guard{{{}, lhs->index.offset}, static_cast<std::int64_t>(rhs->value)};
  int at_one = 0;
  for (const AffineTerm& t : lhs->index.terms) {
    if (!(t.symbol == r)) {
      guard.before.terms.push_back(t);
    } else if (t.coeff == 1) {
      ++at_one;
    } else {
      return std::nullopt;
    }
  }
  if (at_one != 1) return std::nullopt;
  return guard;
}

// Whether every thread r < threads has a step at the first iteration of each strided loop: the
// guard's `before` mentions only those loops, and before(begins) + threads - 1 < bound.
bool every_thread_steps_first(const RowGuard& guard, const std::vector<const For*>& strided, std::int64_t threads) {
  std::int64_t first = guard.before.offset;
  for (const AffineTerm& t : guard.before.terms) {
    const auto loop = std::find_if(strided.begin(), strided.end(), [&](const For* f) { return f->index == t.symbol; });
    if (loop == strided.end()) return false;
    first += t.coeff * (*loop)->begin;
  }
  return first + threads - 1 < guard.bound;
}

}  // namespace

std::optional<BlockReduction> block_reduction(const For& loop) {
  // No step at all: the tree would accumulate a slot no thread stored (the serial loop does nothing).
  if (loop.end <= loop.begin) return std::nullopt;
  auto body = flatten_seq(loop.body);
  std::vector<const For*> strided;
  while (body.size() == 1 && std::holds_alternative<For>(body[0]->node)) {
    const For& f = std::get<For>(body[0]->node);
    if (f.axis != AxisType::Serial || f.end <= f.begin) return std::nullopt;
    strided.push_back(&f);
    body = flatten_seq(f.body);
  }
  if (body.size() != 1) return std::nullopt;
  std::optional<RowGuard> guard;
  if (const auto* guarded = std::get_if<If>(&body[0]->node)) {
    guard = row_guard(guarded->condition, loop.index);
    if (!guard || (!strided.empty() && !every_thread_steps_first(*guard, strided, loop.end - loop.begin))) return std::nullopt;
    body = flatten_seq(guarded->body);
    if (body.size() != 1) return std::nullopt;
  }
  const auto* set = std::get_if<Set>(&body[0]->node);
  if (set == nullptr || mentions(set->index, loop.index)) return std::nullopt;
  for (const For* f : strided)
    if (mentions(set->index, f->index)) return std::nullopt;
  const auto* apply = std::get_if<Apply>(&set->value->node);
  if (apply == nullptr || apply->dtype == DType::U4x32) return std::nullopt;
  const auto is_cell = [&](const ScalarRef& x) {
    const auto* g = std::get_if<Get>(&x->node);
    return g != nullptr && g->node->id == set->node->id && g->index == set->index;
  };
  BlockReduction out{set->node, set->index, apply->op, apply->dtype, nullptr, std::move(guard), std::move(strided)};
  if (is_block_accum(apply->op) && apply->args.size() == 2 && is_cell(apply->args[0])) {
    out.value = apply->args[1];
  } else if ((apply->op == Op::Add || apply->op == Op::Mul) && apply->args.size() == 2 && is_cell(apply->args[1])) {
    // v + d: a sum or product in either order (a re-association anyway). Not max(v, d): with
    // two NaNs maximumNumber keeps its first operand, so the serial loop keeps the last v's NaN
    // where the tree would keep d's.
    out.value = apply->args[0];
  } else if (apply->op == Op::Fma && apply->args.size() == 3 && is_cell(apply->args[2])) {
    // fma(a, b, d): a sum of products, each rounded before the tree adds it. The single rounding
    // of the fused form is given up with the order: both are what WorkgroupReduce licenses.
    out.accum = Op::Add;
    out.value = ir::apply(Op::Mul, apply->dtype, {apply->args[0], apply->args[1]});
  } else {
    return std::nullopt;
  }
  if (reads_or_opaque(out.value, *set->node)) return std::nullopt;
  return out;
}

bool same_in_every_thread(const ScalarRef& condition, const std::set<Symbol>& thread_indices) {
  bool reads = false;
  for_each_scalar(condition, [&](const Scalar& s) {
    reads = reads || std::holds_alternative<Get>(s.node) || std::holds_alternative<GetDynamic>(s.node) ||
            std::holds_alternative<GetLocal>(s.node) || std::holds_alternative<LocalScope>(s.node);
  });
  if (reads) return false;
  const std::set<Symbol> names = free_symbols(condition);
  return std::none_of(names.begin(), names.end(), [&](Symbol s) { return thread_indices.count(s) != 0; });
}

}  // namespace cannl::ir
