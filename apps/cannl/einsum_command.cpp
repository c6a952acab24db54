// `cannl einsum`: shapes parsed as the library prints them (`B|I->O`), shape inference through
// cannl::shape, and evaluation straight from the step's block projections on the host, so the
// numbers show exactly what the projections say: taps that fall into padding read nothing, and
// result cells no block writes keep the accumulator's neutral element.

#include "einsum_command.h"

#include <cctype>
#include <charconv>
#include <cmath>
#include <limits>
#include <ostream>

#include "cannl/shape/shape.h"
#include "cannl/support/checked.h"
#include "cannl/support/error.h"
#include "cannl/support/memory_budget.h"

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
  if (v == "max") return Accum::Max;
  if (v == "min") return Accum::Min;
  return Accum::Sum;  // the option table admits sum, max and min only
}

Request request_from(const ParsedArgs& args) {
  Request r;
  r.eval = args.flag("eval");
  r.accum = parse_accum(args.text("accum", "sum"));
  r.spec = args.positional.at(0);
  r.shapes.assign(args.positional.begin() + 1, args.positional.end());
  return r;
}

bool is_basis_name(const std::string& name) {
  if (name.empty() || !std::isalpha(static_cast<unsigned char>(name[0]))) return false;
  for (char c : name)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  return true;
}

/// One axis as the library prints it: `3`, or `rgb=3` for a size with a named basis.
shape::Dim parse_axis(const std::string& piece, const std::string& whole) {
  const auto eq = piece.find('=');
  const std::string name = eq == std::string::npos ? "" : piece.substr(0, eq);
  const std::string size = eq == std::string::npos ? piece : piece.substr(eq + 1);
  std::int64_t v = -1;
  const auto [end, ec] = std::from_chars(size.data(), size.data() + size.size(), v);
  if (size.empty() || ec != std::errc() || end != size.data() + size.size() || v < 0 ||
      (eq != std::string::npos && !is_basis_name(name)))
    throw RuntimeUsageError("bad shape '" + whole +
                            "': expected comma-separated sizes (3, or rgb=3 for a named basis) in B|I->O, got '" +
                            piece + "'");
  return name.empty() ? shape::Dim::solved(v) : shape::Dim::solved(v, shape::Basis::named(name));
}

shape::Row parse_row(const std::string& text, const std::string& whole) {
  std::vector<shape::Dim> out;
  if (text.empty()) return shape::Row::closed(out);
  std::size_t at = 0;
  while (true) {
    const std::size_t comma = text.find(',', at);
    out.push_back(parse_axis(text.substr(at, comma == std::string::npos ? std::string::npos : comma - at), whole));
    if (comma == std::string::npos) return shape::Row::closed(out);
    at = comma + 1;
  }
}

/// `B|I->O`, `I->O`, `B|O` or `O`; every row closed.
shape::ShapeRef parse_shape(const std::string& name, const std::string& s) {
  std::string batch, input, output = s;
  if (const auto bar = s.find('|'); bar != std::string::npos) {
    batch = s.substr(0, bar);
    output = s.substr(bar + 1);
  }
  if (const auto arrow = output.find("->"); arrow != std::string::npos) {
    input = output.substr(0, arrow);
    output = output.substr(arrow + 2);
  }
  auto shape = shape::new_shape(name, {.batch = {{}}, .input = {{}}, .output = {{}}});
  shape->batch = parse_row(batch, s);
  shape->input = parse_row(input, s);
  shape->output = parse_row(output, s);
  return shape;
}

/// Shape inference has checked every count of the step against int64 already.
std::int64_t count(const std::vector<std::int64_t>& dims) { return checked_product(dims).value_or(-1); }

/// --eval materializes the result as doubles and visits every point of every block's loop nest:
/// both are checked before the first allocation, so a huge shape is an error, not a hang.
void check_eval_size(const std::vector<std::int64_t>& result_dims, const std::vector<shape::Block>& blocks) {
  constexpr std::int64_t kMaxPoints = std::int64_t{1} << 32;
  const auto bytes = checked_mul(count(result_dims), 8);
  memory::check_budget(bytes.value_or(-1), "einsum --eval of the result");
  std::int64_t points = 0;
  for (const auto& b : blocks) points = checked_add(points, count(b.projections.product_space)).value_or(kMaxPoints + 1);
  if (points > kMaxPoints)
    throw RuntimeUsageError("einsum --eval would visit " + std::to_string(points) +
                            " points of the loop nest; it evaluates small examples only (at most 2^32)");
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
    auto s = parse_shape("operand" + std::to_string(i + 1), r.shapes[i]);
    shape::propagate({s->name, s, {}, shape::Terminal{}});
    operands.push_back(s);
  }
  auto result = shape::new_shape("result");
  const int step = shape::propagate({"einsum", result, operands, shape::Einsum{r.spec}});
  shape::finish_inference();
  const auto blocks = shape::block_projections(step);
  if (r.eval) check_eval_size(shape::dims(*result), blocks);  // before any output
  out << shape::to_string(*result) << "\n";
  if (!r.eval) return 0;
  std::vector<double> values(static_cast<std::size_t>(count(shape::dims(*result))), neutral(r.accum));
  for (const auto& b : blocks) eval_block(b, r.accum, values);
  for (std::size_t i = 0; i < values.size(); ++i) out << (i ? " " : "") << format_number(values[i]);
  out << "\n";
  return 0;
}

}  // namespace

const CommandSpec& einsum_command_spec() {
  static const CommandSpec spec{
      .name = "einsum",
      .summary = "Infer the result shape of an einsum spec over operand shapes (B|I->O, e.g. 2|3->4);\n"
                 "with --eval, also compute it over operands that hold their flat offsets.",
      .options = {{.name = "eval", .kind = OptionKind::Flag, .help = "print the result's values too"},
                  {.name = "accum", .kind = OptionKind::Choice, .value_name = "OP",
                   .help = "accumulation of --eval: sum (default), max or min",
                   .choices = {"sum", "max", "min"}}},
      .positional_usage = "SPEC SHAPE...",
      .min_positional = 1,
      .max_positional = 65,
      .notes = "example: cannl einsum \"ij;jk=>ik\" 2,3 3,4   prints 2,4"};
  return spec;
}

int run_einsum_command(const ParsedArgs& args, std::ostream& out) {
  return run(request_from(args), out);
}

}  // namespace cannl::app
