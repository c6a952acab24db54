// Property fuzzer for the solver: random consistent spec/shape pairs (plain labels, diagonals,
// reductions, strided / dilated / padded convolutions, concatenation) must solve to the known
// result shape; the same pairs with one shared axis resized must raise ShapeError. A small fixed
// budget runs with the tests; CANNL_TEST_FUZZ_ITERATIONS=N runs longer, CANNL_TEST_FUZZ_SEED=S
// draws other cases. A third property gives
// labels named bases: they must reach the result, and a renamed basis must fail.

#include <cstdlib>
#include <random>

#include "shape/test_util.h"

namespace cannl::shape::testing {
namespace {

class SolverProperty : public ShapeTest {};

struct Case {
  std::string spec;
  std::vector<Dims> operands;
  Dims expected;
  // (operand, axis) of a plain label that also occurs elsewhere: resizing it is inconsistent.
  int bad_operand = -1, bad_axis = -1;
  std::vector<std::vector<std::string>> operand_labels;  // per axis; empty for convolution axes
  std::vector<std::string> result_texts;                 // the result axes as written in the spec
};

struct Axis {
  std::string text;
  std::int64_t size;
  std::string label;  // plain label, empty otherwise
};

Case random_case(std::mt19937& rng) {
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  const int n_labels = pick(1, 4);
  std::vector<std::int64_t> size;
  for (int i = 0; i < n_labels; ++i) size.push_back(pick(1, 5));
  auto name = [](int i) { return "l" + std::to_string(i); };
  const int n_ops = pick(1, 3);
  std::vector<std::vector<Axis>> ops(static_cast<std::size_t>(n_ops));
  std::vector<int> used(static_cast<std::size_t>(n_labels), 0);
  for (auto& op : ops)
    for (int a = pick(0, 3); a > 0; --a) {
      const int l = pick(0, n_labels - 1);
      op.push_back({name(l), size[static_cast<std::size_t>(l)], name(l)});
      ++used[static_cast<std::size_t>(l)];
    }
  for (int l = 0; l < n_labels; ++l)
    if (!used[static_cast<std::size_t>(l)]) ops[0].push_back({name(l), size[static_cast<std::size_t>(l)], name(l)}), used[static_cast<std::size_t>(l)] = 1;
  std::vector<Axis> result;
  for (int l = 0; l < n_labels; ++l)
    if (pick(0, 1)) result.push_back({name(l), size[static_cast<std::size_t>(l)], ""});
  if (pick(0, 2) == 0) {  // convolution: operand 0 reads s*o (=|<)+ d*k, the last operand holds k
    const std::int64_t o = pick(1, 4), k = pick(1, 3), s = pick(1, 2), d = pick(1, 2);
    const bool pad = pick(0, 1);
    const std::int64_t in = pad ? s * o : s * (o - 1) + 1 + (k - 1) * d;
    ops[0].push_back({std::to_string(s) + "*co" + (pad ? "=+" : "<+") + std::to_string(d) + "*ck", in, ""});
    ops.back().push_back({"ck", k, "ck"});
    result.push_back({"co", o, ""});
  }
  if (n_labels >= 2 && pick(0, 2) == 0)  // concatenation of two operand labels in the result
    result.push_back({name(0) + "^" + name(1), size[0] + size[1], ""});
  std::shuffle(result.begin(), result.end(), rng);
  Case c;
  auto row = [](const std::vector<Axis>& axes) {
    std::string s = "|->";
    for (std::size_t i = 0; i < axes.size(); ++i) s += (i ? ", " : "") + axes[i].text;
    return s + (axes.size() == 1 ? "," : "");
  };
  std::map<std::string, int> occurrences;
  for (const auto& op : ops)
    for (const auto& a : op)
      if (!a.label.empty()) ++occurrences[a.label];
  for (std::size_t i = 0; i < ops.size(); ++i) {
    c.spec += (i ? "; " : "") + row(ops[i]);
    Dims dims;
    c.operand_labels.emplace_back();
    for (std::size_t j = 0; j < ops[i].size(); ++j) {
      dims.push_back(ops[i][j].size);
      c.operand_labels.back().push_back(ops[i][j].label);
      if (!ops[i][j].label.empty() && occurrences[ops[i][j].label] > 1)
        c.bad_operand = static_cast<int>(i), c.bad_axis = static_cast<int>(j);
    }
    c.operands.push_back(dims);
  }
  c.spec += " => " + row(result);
  for (const auto& a : result) c.expected.push_back(a.size), c.result_texts.push_back(a.text);
  return c;
}

/// A case with dimension bases: some labels get a named basis (never `l1`, so a concatenation
/// `l0^l1` has at most one named part, nor the kernel `ck`), the operands are labels specs and
/// the expected result is the printed shape. `bad` renames the basis of the inconsistent axis.
struct NamedCase {
  std::vector<std::string> operands;  // labels specs
  std::string expected;
};

NamedCase with_bases(const Case& c, std::mt19937& rng, bool bad) {
  std::map<std::string, std::string> basis;
  for (const auto& labels : c.operand_labels)
    for (const auto& l : labels)
      if (!l.empty() && l != "l1" && l != "ck" && !basis.count(l))
        basis[l] = std::uniform_int_distribution<int>(0, 1)(rng) ? "b" + l : "";
  auto axis = [&](const std::string& name, std::int64_t size) {
    return (name.empty() ? "" : name + "=") + std::to_string(size);
  };
  NamedCase n;
  for (std::size_t i = 0; i < c.operands.size(); ++i) {
    std::string spec = "|->";
    for (std::size_t j = 0; j < c.operands[i].size(); ++j) {
      const std::string& l = c.operand_labels[i][j];
      const bool renamed = bad && static_cast<int>(i) == c.bad_operand && static_cast<int>(j) == c.bad_axis;
      spec += (j ? ", " : "") + axis(renamed ? "zz" : (l.empty() ? "" : basis[l]), c.operands[i][j]);
    }
    n.operands.push_back(spec);
  }
  for (std::size_t j = 0; j < c.result_texts.size(); ++j) {
    const std::string& t = c.result_texts[j];
    const std::string name = t == "co" ? "" : basis[t.substr(0, t.find('^'))];  // l0^l1: l0's basis
    n.expected += (j ? "," : "") + axis(name, c.expected[j]);
  }
  return n;
}

std::string solve_named(const Case& c, const NamedCase& n) {
  reset();
  std::vector<ShapeRef> shapes;
  for (const auto& spec : n.operands) {
    shapes.push_back(new_shape_from_labels("x", spec));
    propagate({"x", shapes.back(), {}, Terminal{}});
  }
  auto r = einsum(c.spec, shapes);
  finish_inference();
  return to_string(*r);
}

Dims solve(const Case& c, const std::vector<Dims>& operands) {
  reset();
  std::vector<ShapeRef> shapes;
  for (const auto& d : operands) shapes.push_back(leaf("x", {.batch = {{}}, .input = {{}}, .output = d}));
  auto r = einsum(c.spec, shapes);
  finish_inference();
  return dims(*r);
}

int iterations() {
  const char* env = std::getenv("CANNL_TEST_FUZZ_ITERATIONS");
  return env ? std::atoi(env) : 300;
}

/// CANNL_TEST_FUZZ_SEED=N shifts every property's seed, so repeated long runs see new cases.
std::mt19937 seeded(std::uint32_t base) {
  const char* env = std::getenv("CANNL_TEST_FUZZ_SEED");
  return std::mt19937(base + (env ? static_cast<std::uint32_t>(std::strtoul(env, nullptr, 10)) : 0u));
}

TEST_F(SolverProperty, ConsistentSpecsSolveToTheKnownShape) {
  std::mt19937 rng = seeded(20260714);
  for (int it = 0; it < iterations(); ++it) {
    const Case c = random_case(rng);
    SCOPED_TRACE("spec: " + c.spec);
    try {
      EXPECT_EQ(solve(c, c.operands), c.expected);
    } catch (const std::exception& e) {
      ADD_FAILURE() << e.what();
    }
  }
}

TEST_F(SolverProperty, InconsistentSpecsRaiseShapeError) {
  std::mt19937 rng = seeded(777);
  int checked = 0;
  for (int it = 0; it < iterations(); ++it) {
    const Case c = random_case(rng);
    if (c.bad_operand < 0) continue;
    auto operands = c.operands;
    operands[static_cast<std::size_t>(c.bad_operand)][static_cast<std::size_t>(c.bad_axis)] += 1;
    SCOPED_TRACE("spec: " + c.spec);
    expect_error<ShapeError>([&] { solve(c, operands); }, "");
    ++checked;
  }
  EXPECT_GT(checked, iterations() / 10);
}

TEST_F(SolverProperty, NamedBasesPropagateAndMustAgree) {
  std::mt19937 rng = seeded(4242);
  int checked = 0;
  for (int it = 0; it < iterations(); ++it) {
    const Case c = random_case(rng);
    const NamedCase good = with_bases(c, rng, false);
    SCOPED_TRACE("spec: " + c.spec + " operands: " + good.operands[0] + " ...");
    try {
      EXPECT_EQ(solve_named(c, good), good.expected);
    } catch (const std::exception& e) {
      ADD_FAILURE() << e.what();
    }
    if (c.bad_operand < 0) continue;
    const NamedCase bad = with_bases(c, rng, true);
    expect_error<ShapeError>([&] { solve_named(c, bad); }, "different bases");
    ++checked;
  }
  EXPECT_GT(checked, iterations() / 10);
}

}  // namespace
}  // namespace cannl::shape::testing
