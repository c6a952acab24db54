// internal_check's three forms: a string, a literal, and a callable that builds the message only
// when the check fails (the interpreter's hot paths rely on that laziness).
#include <gtest/gtest.h>

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

}  // namespace
}  // namespace cannl
