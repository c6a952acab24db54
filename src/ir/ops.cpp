#include "cannl/ir/ops.h"

#include <array>

namespace cannl::ir {
namespace {

struct OpRow {
  std::string_view name;
  int arity;
  double neutral;
  bool accumulator;
  std::string_view c_float;
  std::string_view c_int;
};

constexpr std::array<OpRow, kOpCount> kOpTable = {{
#define CANNL_OP(Enum, arity, name, neutral, accum, cfloat, cint) \
  {name, arity, neutral, accum, cfloat, cint},
#include "cannl/ir/ops.def"
#undef CANNL_OP
}};

static_assert(kOpTable.size() == static_cast<std::size_t>(Op::Mul3) + 1,
              "ops.def rows and the Op enum must agree");

const OpRow& row(Op op) { return kOpTable[static_cast<std::size_t>(op)]; }

}  // namespace

int op_arity(Op op) { return row(op).arity; }
std::string_view op_name(Op op) { return row(op).name; }
double op_neutral(Op op) { return row(op).neutral; }
bool op_is_accumulator(Op op) { return row(op).accumulator; }
std::string_view op_c_float_spelling(Op op) { return row(op).c_float; }
std::string_view op_c_int_spelling(Op op) { return row(op).c_int; }

std::optional<Op> op_from_name(std::string_view name) {
  for (std::size_t i = 0; i < kOpTable.size(); ++i)
    if (kOpTable[i].name == name) return static_cast<Op>(i);
  return std::nullopt;
}

bool op_is_predicate(Op op) {
  switch (op) {
    case Op::Not: case Op::Cmplt: case Op::Cmpeq: case Op::Cmpne: case Op::Or: case Op::And:
      return true;
    default:
      return false;
  }
}

bool op_is_transcendental(Op op) {
  switch (op) {
    case Op::Exp: case Op::Log: case Op::Exp2: case Op::Log2: case Op::Sin: case Op::Cos:
    case Op::Tanh: case Op::Pow:
      return true;
    default:
      return false;
  }
}

}  // namespace cannl::ir
