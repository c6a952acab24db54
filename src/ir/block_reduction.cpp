// Recognizing the cooperative block reduction form (block_reduction.h).
#include "cannl/ir/block_reduction.h"

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

}  // namespace

std::optional<BlockReduction> block_reduction(const For& loop) {
  const auto body = flatten_seq(loop.body);
  if (body.size() != 1) return std::nullopt;
  const auto* set = std::get_if<Set>(&body[0]->node);
  if (set == nullptr || mentions(set->index, loop.index)) return std::nullopt;
  const auto* apply = std::get_if<Apply>(&set->value->node);
  if (apply == nullptr || !is_block_accum(apply->op) || apply->args.size() != 2) return std::nullopt;
  const auto* acc = std::get_if<Get>(&apply->args[0]->node);
  if (acc == nullptr || acc->node->id != set->node->id || acc->index != set->index) return std::nullopt;
  if (reads_or_opaque(apply->args[1], *set->node)) return std::nullopt;
  if (apply->dtype == DType::U4x32) return std::nullopt;
  return BlockReduction{set->node, set->index, apply->op, apply->dtype, apply->args[1]};
}

}  // namespace cannl::ir
