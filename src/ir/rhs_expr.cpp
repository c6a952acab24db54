#include <cstdio>

#include "cannl/ir/assignments.h"

namespace cannl::ir {

RhsExprRef RhsExpr::argument(int index) {
  auto e = std::make_shared<RhsExpr>();
  e->kind = Kind::Arg;
  e->arg = index;
  return e;
}

RhsExprRef RhsExpr::constant(double value) {
  auto e = std::make_shared<RhsExpr>();
  e->kind = Kind::Constant;
  e->value = value;
  return e;
}

RhsExprRef RhsExpr::apply(Op op, std::vector<RhsExprRef> children) {
  auto e = std::make_shared<RhsExpr>();
  e->kind = Kind::Apply;
  e->op = op;
  e->children = std::move(children);
  return e;
}

std::string RhsExpr::to_string(const std::vector<std::string>& arg_names) const {
  switch (kind) {
    case Kind::Arg:
      return arg < static_cast<int>(arg_names.size()) ? arg_names[arg] : "$" + std::to_string(arg);
    case Kind::Constant: {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%.9g", value);
      return buf;
    }
    case Kind::Apply: {
      std::string out(op_name(op));
      out += "(";
      for (std::size_t i = 0; i < children.size(); ++i) {
        if (i) out += ", ";
        out += children[i]->to_string(arg_names);
      }
      return out + ")";
    }
  }
  return "?";
}

}  // namespace cannl::ir
