// `cannl einsum`: shapes parsed as the library prints them (`B|I->O`), shape inference through
// cannl::shape, and evaluation straight from the step's block projections on the host, so the
// numbers show exactly what the projections say: taps that fall into padding read nothing, and
// result cells no block writes keep the accumulator's neutral element.

#include "einsum_command.h"

#include <charconv>
#include <cmath>
#include <limits>
#include <ostream>

#include "cannl/shape/shape.h"
#include "cannl/support/error.h"

namespace cannl::app {
namespace {

enum class Accum { Sum, Max, Min };

struct Request {
  bool eval = false;
  Accum accum = Accum::Sum;
  std::string spec;
  std::vector<std::string> shapes;
};

Accum parse_accum(const std::string& v) {
  if (v == "sum") return Accum::Sum;
  if (v == "max") return Accum::Max;
  if (v == "min") return Accum::Min;
  throw RuntimeUsageError("--accum expects sum, max or min, got '" + v + "'");
}

Request parse_args(const std::vector<std::string>& args) {
  Request r;
  bool have_spec = false;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--eval") {
      r.eval = true;
    } else if (a == "--accum") {
      if (i + 1 >= args.size()) throw RuntimeUsageError("--accum expects sum, max or min");
      r.accum = parse_accum(args[++i]);
    } else if (a.rfind("--accum=", 0) == 0) {
      r.accum = parse_accum(a.substr(8));
    } else if (!have_spec) {
      r.spec = a;
      have_spec = true;
    } else {
      r.shapes.push_back(a);
    }
  }
  if (!have_spec)
    throw RuntimeUsageError("usage: cannl einsum [--eval] [--accum sum|max|min] SPEC SHAPE...");
  return r;
}

std::vector<std::int64_t> parse_sizes(const std::string& text, const std::string& whole) {
  std::vector<std::int64_t> out;
  if (text.empty()) return out;
  std::size_t at = 0;
  while (true) {
    const std::size_t comma = text.find(',', at);
    const std::string piece = text.substr(at, comma == std::string::npos ? std::string::npos : comma - at);
    std::int64_t v = -1;
    const auto [end, ec] = std::from_chars(piece.data(), piece.data() + piece.size(), v);
    if (piece.empty() || ec != std::errc() || end != piece.data() + piece.size() || v < 0)
      throw RuntimeUsageError("bad shape '" + whole + "': expected comma-separated sizes in B|I->O, got '" +
                              piece + "'");
    out.push_back(v);
    if (comma == std::string::npos) return out;
    at = comma + 1;
  }
}

/// `B|I->O`, `I->O`, `B|O` or `O`.
shape::ShapeSpec parse_shape(const std::string& s) {
  std::string batch, input, output = s;
  if (const auto bar = s.find('|'); bar != std::string::npos) {
    batch = s.substr(0, bar);
    output = s.substr(bar + 1);
  }
  if (const auto arrow = output.find("->"); arrow != std::string::npos) {
    input = output.substr(0, arrow);
    output = output.substr(arrow + 2);
  }
  return {parse_sizes(batch, s), parse_sizes(input, s), parse_sizes(output, s)};
}

std::int64_t count(const std::vector<std::int64_t>& dims) {
  std::int64_t n = 1;
  for (auto d : dims) n *= d;
  return n;
}

/// Row-major flat offset, or -1 when an index falls outside (a padding tap).
std::int64_t flat(const std::vector<ir::AxisIndex>& at, const std::vector<std::int64_t>& dims,
                  const std::vector<std::int64_t>& point, const std::vector<ir::Symbol>& iters) {
  std::int64_t off = 0;
  for (std::size_t a = 0; a < at.size(); ++a) {
    std::int64_t v = at[a].offset;
    for (const auto& term : at[a].terms)
      for (std::size_t k = 0; k < iters.size(); ++k)
        if (iters[k] == term.symbol) v += term.coeff * point[k];
    if (v < 0 || v >= dims[a]) return -1;
    off = off * dims[a] + v;
  }
  return off;
}

double neutral(Accum a) {
  if (a == Accum::Sum) return 0;
  const double inf = std::numeric_limits<double>::infinity();
  return a == Accum::Max ? -inf : inf;
}

double combine(Accum a, double x, double y) {
  return a == Accum::Sum ? x + y : a == Accum::Max ? std::max(x, y) : std::min(x, y);
}

void eval_block(const shape::Block& b, Accum accum, std::vector<double>& result) {
  const auto& p = b.projections;
  std::vector<std::int64_t> point(p.product_space.size(), 0);
  if (count(p.product_space) == 0) return;
  while (true) {
    const std::int64_t out = flat(p.project_lhs, p.lhs_dims, point, p.product_iterators);
    double value = 1;
    bool inside = out >= 0;
    for (std::size_t i = 0; i < p.project_rhs.size() && inside; ++i) {
      if (!b.live_rhs[i]) continue;
      const std::int64_t in = flat(p.project_rhs[i], p.rhs_dims[i], point, p.product_iterators);
      inside = in >= 0;
      value *= static_cast<double>(in);  // operands hold their own flat offsets
    }
    if (inside) result[static_cast<std::size_t>(out)] = combine(accum, result[static_cast<std::size_t>(out)], value);
    std::size_t k = point.size();
    while (k > 0 && ++point[k - 1] == p.product_space[k - 1]) point[--k] = 0;
    if (k == 0) return;
  }
}

std::string format_number(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  if (v == std::floor(v) && std::fabs(v) < 1e15) return std::to_string(static_cast<std::int64_t>(v));
  char buf[64];
  const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, end);
}

int run(const Request& r, std::ostream& out) {
  shape::reset();
  std::vector<shape::ShapeRef> operands;
  for (std::size_t i = 0; i < r.shapes.size(); ++i) {
    auto s = shape::new_shape("operand" + std::to_string(i + 1), parse_shape(r.shapes[i]));
    shape::propagate({s->name, s, {}, shape::Terminal{}});
    operands.push_back(s);
  }
  auto result = shape::new_shape("result");
  const int step = shape::propagate({"einsum", result, operands, shape::Einsum{r.spec}});
  shape::finish_inference();
  out << shape::to_string(*result) << "\n";
  if (!r.eval) return 0;
  std::vector<double> values(static_cast<std::size_t>(count(shape::dims(*result))), neutral(r.accum));
  for (const auto& b : shape::block_projections(step)) eval_block(b, r.accum, values);
  for (std::size_t i = 0; i < values.size(); ++i) out << (i ? " " : "") << format_number(values[i]);
  out << "\n";
  return 0;
}

}  // namespace

int run_einsum_command(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  try {
    return run(parse_args(args), out);
  } catch (const UserError& e) {
    err << "error: " << e.what() << "\n";
    return 1;
  }
}

}  // namespace cannl::app
