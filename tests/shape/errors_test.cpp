// User-facing errors of shape inference: type, message, operation, shapes and spec carets.

#include <random>

#include "shape/test_util.h"

namespace cannl::shape::testing {
namespace {

class Errors : public ShapeTest {};

ShapeRef out_only(const std::string& name, Dims output) {
  return leaf(name, {.batch = {{}}, .input = {{}}, .output = output});
}

TEST_F(Errors, EinsumMismatchPointsAtAxisLabel) {
  auto a = out_only("a", {2, 3});
  auto b = out_only("b", {4, 5});
  const auto msg = expect_error<ShapeError>([&] { einsum("ij;jk=>ik", {a, b}); },
                                            "solved dimensions for axis: mismatch (3 vs 4)");
  EXPECT_NE(msg.find("in operation 'einsum'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("operand 1 'a': 2,3"), std::string::npos) << msg;
  EXPECT_NE(msg.find("operand 2 'b': 4,5"), std::string::npos) << msg;
  EXPECT_NE(msg.find("  ij;jk=>ik\n     ^"), std::string::npos) << msg;  // under the second j
}

TEST_F(Errors, PointwiseMismatchNamesOperationAndShapes) {
  auto a = out_only("a", {3});
  auto b = out_only("b", {5});
  const auto msg = expect_error<ShapeError>([&] { op("add", Pointwise{}, {a, b}); },
                                            "dimension comparison for axis: mismatch");
  EXPECT_NE(msg.find("in operation 'add'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("operand 2 'b': 5"), std::string::npos) << msg;
}

TEST_F(Errors, ComposeContractionMismatch) {
  auto w = leaf("w", {.batch = {{}}, .input = {{3}}, .output = {{4}}});
  auto x = out_only("x", {5});
  expect_error<ShapeError>([&] { op("matmul", Compose{}, {w, x}); }, "mismatch (3 ⊑ 5)");
}

TEST_F(Errors, TooManyAxesInOperand) {
  auto a = out_only("a", {2, 3});
  auto b = out_only("b", {3});
  expect_error<ShapeError>(
      [&] { op("add", Pointwise{}, {a, b}, nullptr, {.batch = {{}}, .input = {{}}, .output = {{3}}}); },
      "Too many axes in an operand; maybe using * instead of pointmul?");
}

TEST_F(Errors, WrongOperandCount) {
  auto a = out_only("a", {2, 3});
  expect_error<EinsumSyntaxError>([&] { einsum("ij;jk=>ik", {a}); }, "expected 2 operands for spec 'ij;jk=>ik'");
}

TEST_F(Errors, SyntaxErrorThroughPropagate) {
  auto a = out_only("a", {2});
  expect_error<EinsumSyntaxError>([&] { einsum("i=>i;", {a}); }, "unexpected ';' at position 4");
}

TEST_F(Errors, MismatchingNumberOfAxes) {
  auto a = out_only("a", {2, 3, 4});
  expect_error<ShapeError>([&] { einsum("ij=>ji", {a}); }, "Mismatching number of axes");
}

TEST_F(Errors, SelfReferenceOfRowVariable) {
  auto x = leaf("x", {.batch = {{}}, .input = {{}}});
  expect_error<ShapeError>([&] { einsum("...;i...=>...", {x, x}); }, "Infinite number of axes by self-reference");
}

TEST_F(Errors, FixedIndexBeyondAxis) {
  auto x = out_only("x", {3, 2});
  const auto msg = expect_error<ShapeError>([&] { einsum("5j=>j", {x}); }, "At_least_dim constraint failed, expected 6");
  EXPECT_NE(msg.find("  5j=>j\n  ^"), std::string::npos) << msg;
}

TEST_F(Errors, HiddenDimensionOfParam) {
  auto w = param("w");
  auto v = out_only("v", {3});
  op("matmul", Compose{}, {w, v});
  const auto msg = expect_error<ShapeError>([] { finish_inference(); }, "You forgot to specify the hidden dimension(s)");
  EXPECT_NE(msg.find("parameter 'w'"), std::string::npos) << msg;
}

TEST_F(Errors, HiddenDimensionSizeOfParam) {
  auto w = param("w");
  auto x = out_only("x", {3});
  einsum("i;ij=>j", {x, w});
  expect_error<ShapeError>([] { finish_inference(); }, "You forgot to specify the hidden dimension(s) of parameter 'w'");
}

TEST_F(Errors, DimsBeforeFinish) {
  auto x = new_shape("x");
  expect_error<ShapeError>([&] { dims(*x); }, "not enough shape information");
}

TEST_F(Errors, FailedPropagateLeavesStateUsable) {
  auto a = out_only("a", {2, 3});
  auto b = out_only("b", {4, 5});
  EXPECT_THROW(einsum("ij;jk=>ik", {a, b}), ShapeError);
  auto c = out_only("c", {3, 7});
  int step = -1;
  auto d = einsum("ij;jk=>ik", {a, c}, &step);
  finish_inference();
  EXPECT_EQ(dims(*d), (Dims{2, 7}));
  EXPECT_EQ(projections(step).product_space, (Dims{2, 7, 3}));
}

// A failed finish_inference drops its attempt: a later, unrelated graph infers on its own (the
// failed constraints used to stay pending and fail every later inference), and the failed
// graph's shapes and steps repeat the reason when used again instead of reading half-solved.
TEST_F(Errors, FailedFinishLeavesStateUsable) {
  auto w = param("w");
  auto x = leaf("x", {.batch = {{4}}, .input = {{}}, .output = {{3}}}, Terminal{.total_elems = 12});
  int failed_step = -1;
  auto y = op("y", Compose{}, {w, x}, &failed_step);
  expect_error<ShapeError>([] { finish_inference(); }, "hidden dimension(s) of parameter 'w'");

  auto a = out_only("a", {2, 3});
  auto b = out_only("b", {3, 4});
  int step = -1;
  auto c = einsum("ij;jk=>ik", {a, b}, &step);
  finish_inference();
  EXPECT_EQ(dims(*c), (Dims{2, 4}));
  EXPECT_EQ(projections(step).product_space, (Dims{2, 4, 3}));

  const auto msg = expect_error<ShapeError>([&] { dims(*y); }, "shape 'y' cannot be used");
  EXPECT_NE(msg.find("hidden dimension(s) of parameter 'w'"), std::string::npos) << msg;
  expect_error<ShapeError>([&] { dims(*x); }, "shape 'x' cannot be used");
  expect_error<ShapeError>([&] { projections(failed_step); }, "operation 'y' cannot be used");
  expect_error<ShapeError>([&] { op("z", Pointwise{}, {y, c}); }, "shape 'y' cannot be used");
  finish_inference();  // nothing of the failed graph is pending any more
}

// A failed finish_inference drops only what is linked to the failure: graphs built alongside it
// that share no shape or variable with it (one before it, one after it, each with axes only
// closing decides) finish as if they had been inferred alone. They used to fail with it.
TEST_F(Errors, AFailedFinishDropsOnlyTheGraphLinkedToTheFailure) {
  auto a = leaf("a", {.batch = {{2}}, .input = {{}}, .output = {{3}}});
  auto p = param("p", {.batch = {{}}, .input = {{3}}, .output = {{5}}});
  int before_step = -1;
  auto before = op("before", Compose{}, {p, a}, &before_step);
  auto w = param("w");
  auto x = leaf("x", {.batch = {{4}}, .input = {{}}, .output = {{3}}}, Terminal{.total_elems = 12});
  int failed_step = -1;
  auto y = op("y", Compose{}, {w, x}, &failed_step);
  auto v = leaf("v");  // open rows: closing decides them from the pointwise use
  auto u = out_only("u", {7});
  int after_step = -1;
  auto after = op("after", Pointwise{}, {u, v}, &after_step);
  expect_error<ShapeError>([] { finish_inference(); }, "hidden dimension(s) of parameter 'w'");

  EXPECT_EQ(dims(*before), (Dims{2, 5}));
  EXPECT_EQ(projections(before_step).product_space, (Dims{2, 5, 3}));
  EXPECT_EQ(dims(*after), (Dims{7}));
  EXPECT_EQ(dims(*v), (Dims{7}));
  EXPECT_EQ(projections(after_step).product_space, (Dims{7}));
  expect_error<ShapeError>([&] { dims(*y); }, "shape 'y' cannot be used");
  expect_error<ShapeError>([&] { dims(*x); }, "shape 'x' cannot be used");
  expect_error<ShapeError>([&] { projections(failed_step); }, "operation 'y' cannot be used");
  auto z = op("z", Pointwise{}, {before, before});  // the graph that finished goes on
  finish_inference();
  EXPECT_EQ(dims(*z), (Dims{2, 5}));
}

// A graph that shares a leaf with the failing one is linked to it and fails with it: its leaf's
// shape may hold what the failed attempt half-solved.
TEST_F(Errors, AGraphSharingALeafWithTheFailureFailsWithIt) {
  auto x = leaf("x", {.batch = {{4}}, .input = {{}}, .output = {{3}}}, Terminal{.total_elems = 12});
  auto w = param("w");
  auto y = op("y", Compose{}, {w, x});
  auto s = op("s", Pointwise{}, {x, x});
  auto a = out_only("a", {2});
  auto b = op("b", Pointwise{}, {a, a});
  expect_error<ShapeError>([] { finish_inference(); }, "hidden dimension(s) of parameter 'w'");
  expect_error<ShapeError>([&] { dims(*s); }, "shape 's' cannot be used");
  EXPECT_EQ(dims(*b), (Dims{2}));
}

// set_equal links two graphs through their variables alone: they fail together.
TEST_F(Errors, GraphsLinkedBySetEqualFailTogether) {
  auto i = capture("i"), j = capture("j");
  auto w = param("w");
  auto x = leaf("x", {.batch = {{4}}, .input = {{}}, .output = {{3}}}, Terminal{.total_elems = 12});
  auto y = op("y", Compose{}, {w, x});
  auto q = op("q", Einsum{"..b..|->i => ..b..|->i", {i}}, {y});
  auto v = leaf("v");
  auto t = op("t", Einsum{"|->j => |->j", {j}}, {v});
  set_equal(i, j);
  expect_error<ShapeError>([] { finish_inference(); }, "hidden dimension(s) of parameter 'w'");
  expect_error<ShapeError>([&] { dims(*q); }, "shape 'q' cannot be used");
  expect_error<ShapeError>([&] { dims(*t); }, "shape 't' cannot be used");
}

// After reset() ids restart: a shape of the earlier generation would read the variables of
// whatever reuses its ids, so it is refused by name.
TEST_F(Errors, ShapeFromBeforeResetIsRefused) {
  auto x = out_only("x", {2, 3});
  finish_inference();
  EXPECT_EQ(x->generation, generation());
  reset();
  EXPECT_NE(x->generation, generation());
  auto p = out_only("p", {3, 2});
  finish_inference();
  EXPECT_EQ(dims(*p), (Dims{3, 2}));
  expect_error<RuntimeUsageError>([&] { dims(*x); }, "shape 'x' was created before shape::reset()");
  expect_error<RuntimeUsageError>([&] { einsum("ij=>ji", {x}); }, "shape 'x' was created before shape::reset()");
  auto q = einsum("ij=>ji", {p});  // the refused step left nothing behind
  finish_inference();
  EXPECT_EQ(dims(*q), (Dims{2, 3}));
}

TEST_F(Errors, TotalElementsMismatch) {
  expect_error<ShapeError>([] { leaf("x", {.batch = {{}}, .input = {{}}, .output = {{2, 3}}}, Terminal{.total_elems = 7}); },
                           "Total_elems constraint");
}

TEST_F(Errors, NegativeDimension) {
  expect_error<ShapeError>([] { new_shape("x", {.output = {{-1}}}); }, "negative dimension");
}

TEST_F(Errors, UnknownStepId) {
  expect_error<ShapeError>([] { projections(42); }, "no update step with id 42");
}

/// Random specs on random shapes: inference either succeeds or throws a UserError; never hangs.
TEST_F(Errors, FuzzInferenceTerminates) {
  std::mt19937 rng(7);
  const std::string alphabet = "ijk.|->;0 ";
  int ok = 0, rejected = 0;
  for (int n = 0; n < 300; ++n) {
    reset();
    std::string spec;
    for (int i = static_cast<int>(rng() % 10); i > 0; --i) spec += alphabet[rng() % alphabet.size()];
    spec += "=>" + std::string(1, "ijk."[rng() % 4]);
    try {
      std::vector<ShapeRef> ops;
      const int n_ops = 1 + static_cast<int>(std::count(spec.begin(), spec.end(), ';'));
      for (int o = 0; o < n_ops; ++o) {
        Dims d;
        for (int r = static_cast<int>(rng() % 3); r > 0; --r) d.push_back(1 + static_cast<int>(rng() % 3));
        ops.push_back(rng() % 2 ? leaf("x", {.batch = {{}}, .input = {{}}, .output = d}) : leaf("y"));
      }
      einsum(spec, ops);
      finish_inference();
      ++ok;
    } catch (const UserError&) {
      ++rejected;
    }
  }
  EXPECT_EQ(ok + rejected, 300);
  EXPECT_GT(ok, 0);
}

}  // namespace
}  // namespace cannl::shape::testing
