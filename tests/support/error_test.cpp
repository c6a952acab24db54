// internal_check's three forms: a string, a literal, and a callable that builds the message only
// when the check fails (the interpreter's hot paths rely on that laziness); with_context, which
// says where an error happened without changing its type.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

#include "cannl/support/error.h"

namespace cannl {
namespace {

std::string thrown_message(auto&& check) {
  try {
    check();
  } catch (const InternalError& e) {
    return e.what();
  }
  return "";
}

TEST(InternalCheck, EveryFormThrowsItsMessageWhenTheConditionIsFalse) {
  const std::string name = "w1";
  EXPECT_EQ(thrown_message([&] { internal_check(false, "a literal"); }),
            "cannl internal error (please report): a literal");
  EXPECT_EQ(thrown_message([&] { internal_check(false, "node " + name); }),
            "cannl internal error (please report): node w1");
  EXPECT_EQ(thrown_message([&] { internal_check(false, [&] { return "built " + name; }); }),
            "cannl internal error (please report): built w1");
}

TEST(InternalCheck, TheCallableBuildsNoMessageWhenTheConditionHolds) {
  int built = 0;
  for (int k = 0; k < 3; ++k) internal_check(true, [&] {
      ++built;
      return std::string("unused");
    });
  EXPECT_EQ(built, 0);
  EXPECT_THROW(internal_check(false, [&] {
                 ++built;
                 return std::string("used");
               }),
               InternalError);
  EXPECT_EQ(built, 1);
}

TEST(WithContext, PutsWhereInFrontAndKeepsTheType) {
  std::exception_ptr failure;
  try {
    throw ShapeError("dims differ");
  } catch (...) {
    failure = with_context(std::current_exception(), "on device 1");
  }
  try {
    std::rethrow_exception(failure);
  } catch (const ShapeError& e) {
    EXPECT_STREQ(e.what(), "on device 1: dims differ");
    EXPECT_STREQ(e.kind(), "ShapeError");
  } catch (...) {
    ADD_FAILURE() << "with_context changed the error's type";
  }
}

TEST(WithContext, InternalErrorsToo) {
  std::exception_ptr failure;
  try {
    internal_check(false, "broken invariant");
  } catch (...) {
    failure = with_context(std::current_exception(), "on device 0");
  }
  EXPECT_THROW(
      try { std::rethrow_exception(failure); } catch (const InternalError& e) {
        EXPECT_STREQ(e.what(), "on device 0: cannl internal error (please report): broken invariant");
        throw;
      },
      InternalError);
}

TEST(WithContext, OtherExceptionsAndNullComeBackUnchanged) {
  EXPECT_TRUE(with_context(nullptr, "anywhere") == nullptr);
  const auto failure = with_context(std::make_exception_ptr(std::out_of_range("at(7)")), "on device 1");
  try {
    std::rethrow_exception(failure);
  } catch (const std::out_of_range& e) {
    EXPECT_STREQ(e.what(), "at(7)");
  }
}

}  // namespace
}  // namespace cannl
