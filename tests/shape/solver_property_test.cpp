// Property fuzzer for the solver: random consistent spec/shape pairs (plain labels, diagonals,
// reductions, strided / dilated / padded convolutions, concatenation) must solve to the known
// result shape; the same pairs with one shared axis resized must raise ShapeError. A small fixed
// budget runs with the tests; CANNL_TEST_FUZZ_ITERATIONS=N runs longer, CANNL_TEST_FUZZ_SEED=S
// draws other cases. A third property gives
// labels named bases: they must reach the result, and a renamed basis must fail.

#include <algorithm>
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

__extension__ typedef __int128 Wide;  // an exact oracle for products past int64
constexpr Wide kInt64Max = INT64_MAX;

/// A size for the huge-size property: small half of the time, else 2^e + r with e up to 62.
std::int64_t huge_size(std::mt19937& rng, int max_exponent = 62) {
  auto pick = [&](std::int64_t lo, std::int64_t hi) { return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng); };
  if (pick(0, 1) == 0) return pick(1, 5);
  const int e = static_cast<int>(pick(20, max_exponent));
  return (std::int64_t{1} << e) + pick(-3, 3);
}

/// What sizes past int64 a case involves (computed in 128 bits): `must` when an operand or result
/// axis or element count is past it (a ShapeError is the only right answer), `may` when only the
/// product of all label sizes is (the product space can overflow; an error is allowed).
struct Overflow {
  bool must = false, may = false, unrepresentable_operand = false;
};

Case random_case(std::mt19937& rng, bool huge = false, Overflow* overflow = nullptr) {
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  auto dim = [&](int lo, int hi) -> std::int64_t { return huge ? huge_size(rng) : pick(lo, hi); };
  const int n_labels = pick(1, 4);
  std::vector<std::int64_t> size;
  for (int i = 0; i < n_labels; ++i) size.push_back(dim(1, 5));
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
  Overflow flow;
  Wide all_labels = 1;  // the product of every label's size: bounds the product space
  for (auto v : size) all_labels = std::min<Wide>(all_labels * v, kInt64Max + 1);
  if (pick(0, 2) == 0) {  // convolution: operand 0 reads s*o (=|<)+ d*k, the last operand holds k
    const std::int64_t o = dim(1, 4), k = dim(1, 3);
    // Strides and dilations are spec integers: at most 15 digits.
    const std::int64_t s = huge && pick(0, 1) ? huge_size(rng, 40) : pick(1, 2);
    const std::int64_t d = huge && pick(0, 1) ? huge_size(rng, 40) : pick(1, 2);
    const bool pad = pick(0, 1);
    const Wide in = pad ? Wide{s} * o : Wide{s} * (o - 1) + 1 + Wide{k - 1} * d;
    flow.unrepresentable_operand = in > kInt64Max;
    ops[0].push_back({std::to_string(s) + "*co" + (pad ? "=+" : "<+") + std::to_string(d) + "*ck",
                      static_cast<std::int64_t>(std::min(in, kInt64Max)), ""});
    ops.back().push_back({"ck", k, "ck"});
    result.push_back({"co", o, ""});
    // The index s*o + d*k of a padded axis is computed too, even past the input's end.
    const Wide reach = Wide{s} * o + Wide{d} * k;
    if (reach > kInt64Max) flow.may = true;
    all_labels = std::min<Wide>(all_labels * o, kInt64Max + 1);
    all_labels = std::min<Wide>(all_labels * k, kInt64Max + 1);
  }
  if (n_labels >= 2 && pick(0, 2) == 0) {  // concatenation of two operand labels in the result
    const Wide total = Wide{size[0]} + size[1];
    flow.must = flow.must || total > kInt64Max;
    all_labels = std::min<Wide>(all_labels * std::min(total, kInt64Max + 1), kInt64Max + 1);  // a block iterates the whole axis
    result.push_back({name(0) + "^" + name(1), static_cast<std::int64_t>(std::min(total, kInt64Max)), ""});
  }
  auto elements = [](const std::vector<Axis>& axes) {
    Wide n = 1;
    for (const auto& a : axes) n = std::min<Wide>(n * a.size, kInt64Max + 1);
    return n;
  };
  for (const auto& op : ops) flow.must = flow.must || elements(op) > kInt64Max;
  flow.must = flow.must || elements(result) > kInt64Max;
  flow.may = flow.may || flow.must || all_labels > kInt64Max;
  if (overflow) *overflow = flow;
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

// Sizes up to 2^62 (and strides and dilations up to 2^40): every case solves to the exact shape
// or, when a size really leaves the int64 range, is a ShapeError saying "size overflow"; never a
// wrapped size, another error or a hang. CANNL_TEST_FUZZ_ITERATIONS scales it like the others.
TEST_F(SolverProperty, HugeSizesSolveExactlyOrReportOverflow) {
  std::mt19937 rng = seeded(6262);
  int solved = 0, overflowed = 0;
  for (int it = 0; it < iterations(); ++it) {
    Overflow flow;
    const Case c = random_case(rng, /*huge=*/true, &flow);
    if (flow.unrepresentable_operand) continue;  // the operand itself cannot be written down
    SCOPED_TRACE("spec: " + c.spec);
    try {
      const Dims got = solve(c, c.operands);
      EXPECT_FALSE(flow.must) << "solved although a size is past int64";
      EXPECT_EQ(got, c.expected);
      ++solved;
    } catch (const ShapeError& e) {
      EXPECT_TRUE(flow.may) << "unexpected error: " << e.what();
      EXPECT_NE(std::string(e.what()).find("size overflow"), std::string::npos) << e.what();
      ++overflowed;
    } catch (const std::exception& e) {
      ADD_FAILURE() << "not a ShapeError: " << e.what();
    }
  }
  EXPECT_GT(solved, iterations() / 10);
  EXPECT_GT(overflowed, iterations() / 20);
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
