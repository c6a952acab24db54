#pragma once
// Small loop-IR routines shared by the backend tests.
//
//   auto r = test_routines::pointwise_add(4);  // c[i] = a[i] + b[i]

#include <string>
#include <vector>

#include "cannl/backends/backend.h"
#include "cannl/ir/loop_ir.h"

namespace cannl::test_routines {

using namespace cannl::ir;

/// c[i] = a[i] + b[i] over f32 vectors of length n; params a, b, c.
inline backends::CompileRequest pointwise_add(std::int64_t n, const std::string& name = "add") {
  auto a = make_node("a", DType::F32, {n});
  auto b = make_node("b", DType::F32, {n});
  auto c = make_node("c", DType::F32, {n});
  const Symbol i = fresh_symbol();
  const std::vector<AxisIndex> at{AxisIndex::iterator(i)};
  auto sum = apply(Op::Add, DType::F32, {get(a, at), get(b, at)});
  auto body = for_loop(i, 0, n, set(c, at, sum, "c =: a + b"));
  return {LoweredRoutine{name, body, {}}, {a, b, c}};
}

/// s[i] = sum_j m[i, j] over an f32 m of dims {rows, cols}; params m, s.
inline backends::CompileRequest row_sum(std::int64_t rows, std::int64_t cols) {
  auto m = make_node("m", DType::F32, {rows, cols});
  auto s = make_node("s", DType::F32, {rows});
  const Symbol i = fresh_symbol();
  const Symbol j = fresh_symbol();
  const std::vector<AxisIndex> si{AxisIndex::iterator(i)};
  const std::vector<AxisIndex> mij{AxisIndex::iterator(i), AxisIndex::iterator(j)};
  auto acc = apply(Op::Add, DType::F32, {get(s, si), get(m, mij)});
  auto body = seq({zero_out(s),
                   for_loop(i, 0, rows, for_loop(j, 0, cols, set(s, si, acc, "s =+ m")))});
  return {LoweredRoutine{"row_sum", body, {}}, {m, s}};
}

/// dst[i] = src[i] (the store converts from src's dtype to dst's); params src, dst.
inline backends::CompileRequest convert_copy(DType from, DType to, std::int64_t n) {
  auto src = make_node("src", from, {n});
  auto dst = make_node("dst", to, {n});
  const Symbol i = fresh_symbol();
  const std::vector<AxisIndex> at{AxisIndex::iterator(i)};
  auto body = for_loop(i, 0, n, set(dst, at, get(src, at)));
  const std::string name = "cvt_" + std::string(dtype_name(from)) + "_" + std::string(dtype_name(to));
  return {LoweredRoutine{name, body, {}}, {src, dst}};
}

/// out[i] = op(x[i], y[i]) computed in `dtype` (args converted); params x, y, out (all `dtype`).
inline backends::CompileRequest binary_op(Op op, DType dtype, std::int64_t n) {
  auto x = make_node("x", dtype, {n});
  auto y = make_node("y", dtype, {n});
  auto out = make_node("out", dtype, {n});
  const Symbol i = fresh_symbol();
  const std::vector<AxisIndex> at{AxisIndex::iterator(i)};
  auto value = apply(op, dtype, {get(x, at), get(y, at)});
  auto body = for_loop(i, 0, n, set(out, at, value));
  const std::string name = std::string(op_name(op)) + "_" + std::string(dtype_name(dtype));
  return {LoweredRoutine{name, body, {}}, {x, y, out}};
}

/// For every op with a C spelling for `dtype` (threefry and uniform1 excepted): out_<op>[i] =
/// op(x[i], y[i], z[i]) with as many arguments as the op takes. Params x, y, z, then the outputs.
inline backends::CompileRequest all_ops(DType dtype, std::int64_t n) {
  auto x = make_node("x", dtype, {n});
  auto y = make_node("y", dtype, {n});
  auto z = make_node("z", dtype, {n});
  const Symbol i = fresh_symbol();
  const std::vector<AxisIndex> at{AxisIndex::iterator(i)};
  backends::CompileRequest r{LoweredRoutine{"all_ops_" + std::string(dtype_name(dtype)), nullptr, {}},
                             {x, y, z}};
  std::vector<StmtRef> sets;
  for (int k = 0; k < kOpCount; ++k) {
    const Op op = static_cast<Op>(k);
    if (op == Op::Uniform1 || op == Op::ThreefryCrypto || op == Op::ThreefryLight) continue;
    if ((is_float(dtype) ? op_c_float_spelling(op) : op_c_int_spelling(op)).empty()) continue;
    auto out = make_node("out_" + std::string(op_name(op)), dtype, {n});
    std::vector<ScalarRef> args{get(x, at), get(y, at), get(z, at)};
    args.resize(static_cast<std::size_t>(op_arity(op)));
    sets.push_back(set(out, at, apply(op, dtype, args)));
    r.params.push_back(out);
  }
  r.routine.body = for_loop(i, 0, n, seq(sets));
  return r;
}

/// One source node of dtype `from` copied into one output per dtype (params: src, then one per
/// entry of kAllDTypes).
inline backends::CompileRequest convert_to_all(DType from, std::int64_t n) {
  auto src = make_node("src", from, {n});
  const Symbol i = fresh_symbol();
  const std::vector<AxisIndex> at{AxisIndex::iterator(i)};
  backends::CompileRequest r{LoweredRoutine{"cvt_from_" + std::string(dtype_name(from)), nullptr, {}},
                             {src}};
  std::vector<StmtRef> sets;
  for (DType to : kAllDTypes) {
    auto dst = make_node("to_" + std::string(dtype_name(to)), to, {n});
    sets.push_back(set(dst, at, get(src, at)));
    r.params.push_back(dst);
  }
  r.routine.body = for_loop(i, 0, n, seq(sets));
  return r;
}

}  // namespace cannl::test_routines
