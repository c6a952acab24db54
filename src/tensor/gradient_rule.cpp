#include "cannl/tensor/gradient_rule.h"

#include <map>

namespace cannl::detail {
namespace {

void collect_args(const ir::RhsExprRef& e, std::vector<int>& used) {
  if (e->kind == ir::RhsExpr::Kind::Arg) {
    for (int u : used)
      if (u == e->arg) return;
    used.push_back(e->arg);
  }
  for (const auto& c : e->children) collect_args(c, used);
}

ir::RhsExprRef renumber(const ir::RhsExprRef& e, const std::map<int, int>& mapping) {
  switch (e->kind) {
    case ir::RhsExpr::Kind::Arg: return ir::RhsExpr::argument(mapping.at(e->arg));
    case ir::RhsExpr::Kind::Constant: return e;
    case ir::RhsExpr::Kind::Apply: {
      std::vector<ir::RhsExprRef> children;
      for (const auto& c : e->children) children.push_back(renumber(c, mapping));
      return ir::RhsExpr::apply(e->op, std::move(children));
    }
  }
  return e;
}

/// The environment operand `index` as a node read at its forward slot.
SlotOperand env_operand(const Tensor& self, int index) {
  if (index == 0) return {self.grad(), -1};
  if (index == 1) return {self.value(), -1};
  return {self.args().at(index - 2).value(), index - 2};
}

}  // namespace

CodeBuilder backward_of(GradientRule rule) {
  return [rule = std::move(rule)](const Tensor& self, const ir::Projections& p) {
    std::vector<ir::AsgnRef> code;
    for (std::size_t k = 0; k < rule.size() && k < self.args().size(); ++k) {
      const Tensor& target = self.args()[k];
      if (!rule[k].expr || !target.requires_grad()) continue;
      std::vector<int> used;
      collect_args(rule[k].expr, used);
      std::map<int, int> mapping;
      std::vector<SlotOperand> operands;
      for (int u : used) {
        mapping[u] = static_cast<int>(operands.size());
        operands.push_back(env_operand(self, u));
      }
      code.push_back(grad_assign(target.grad(), p, static_cast<int>(k), operands,
                                 renumber(rule[k].expr, mapping), rule[k].accum));
    }
    return code;
  };
}

CodeBuilder backward_of(std::function<GradientRule(ir::DType)> make_rule) {
  return [make_rule = std::move(make_rule)](const Tensor& self, const ir::Projections& p) {
    return backward_of(make_rule(self.value()->dtype))(self, p);
  };
}

ir::RhsExprRef as_stored(ir::RhsExprRef e, ir::DType dtype) {
  switch (dtype) {
    case ir::DType::F16: return ap(ir::Op::RoundF16, {std::move(e)});
    case ir::DType::BF16: return ap(ir::Op::RoundBf16, {std::move(e)});
    case ir::DType::FP8: return ap(ir::Op::RoundFp8, {std::move(e)});
    default: return e;
  }
}

}  // namespace cannl::detail
