#pragma once
// Helpers shared by the shape tests.

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "cannl/shape/shape.h"
#include "cannl/support/error.h"

namespace cannl::shape::testing {

using Dims = std::vector<std::int64_t>;

/// Resets the global inference state before each test.
class ShapeTest : public ::testing::Test {
 protected:
  void SetUp() override { reset(); }
  void TearDown() override { reset(); }
};

/// A leaf with the given rows: `leaf("x", {.batch = {{2}}, .output = {{3}}})`.
inline ShapeRef leaf(const std::string& name, const ShapeSpec& spec = {}, Terminal t = {}) {
  auto s = new_shape(name, spec);
  propagate({name, s, {}, t});
  return s;
}

inline ShapeRef param(const std::string& name, const ShapeSpec& spec = {}) {
  return leaf(name, spec, Terminal{.is_param = true});
}

inline ShapeRef scalar(const std::string& name = "c") {
  return leaf(name, {}, Terminal{.is_scalar_constant = true});
}

/// A result of `logic` over `operands`; returns the step id through `step`.
inline ShapeRef op(const std::string& name, Logic logic, std::vector<ShapeRef> operands, int* step = nullptr,
                   const ShapeSpec& spec = {}) {
  auto s = new_shape(name, spec);
  const int id = propagate({name, s, std::move(operands), std::move(logic)});
  if (step) *step = id;
  return s;
}

inline ShapeRef einsum(const std::string& spec, std::vector<ShapeRef> operands, int* step = nullptr) {
  return op("einsum", Einsum{spec}, std::move(operands), step);
}

/// Runs `f`, expects an exception of type E whose message contains `needle`; returns the message.
template <class E, class F>
std::string expect_error(F&& f, const std::string& needle) {
  try {
    f();
  } catch (const E& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find(needle), std::string::npos) << "message was:\n" << msg;
    return msg;
  } catch (const std::exception& e) {
    ADD_FAILURE() << "wrong exception type: " << e.what();
    return {};
  }
  ADD_FAILURE() << "no exception thrown; expected: " << needle;
  return {};
}

}  // namespace cannl::shape::testing
