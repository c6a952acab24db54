#pragma once
// Scalar operations, generated from ops.def.
//
//   Op op = Op::Add;  op_arity(op) == 2;  op_name(op) == "add";  op_neutral(op) == 0.0

#include <cmath>
#include <optional>
#include <string_view>

namespace cannl::ir {

enum class Op : unsigned char {
#define CANNL_OP(Enum, arity, name, neutral, accum, cfloat, cint) Enum,
#include "cannl/ir/ops.def"
#undef CANNL_OP
};

inline constexpr int kOpCount = 0
#define CANNL_OP(Enum, arity, name, neutral, accum, cfloat, cint) +1
#include "cannl/ir/ops.def"
#undef CANNL_OP
    ;

/// Number of arguments: 1, 2 or 3.
int op_arity(Op op);
/// Lower-case name used by printers and error messages ("relu_gate").
std::string_view op_name(Op op);
/// Op from its name, if any.
std::optional<Op> op_from_name(std::string_view name);
/// Neutral element: accumulation init and padding-margin fill (Add 0, Mul 1, Max -inf, ...).
double op_neutral(Op op);
/// True when the op may serve as the accumulator of an assignment (`lhs accum= rhs`).
bool op_is_accumulator(Op op);
/// C spelling template for float compute types ("" when undefined); see ops.def.
std::string_view op_c_float_spelling(Op op);
/// C spelling template for integer compute types ("" when undefined).
std::string_view op_c_int_spelling(Op op);
/// True for ops whose result is 0/1 (comparisons, logic, not).
bool op_is_predicate(Op op);
/// True for transcendental ops whose libm results may differ by an ulp or two across libraries.
bool op_is_transcendental(Op op);

}  // namespace cannl::ir
