#pragma once
// For rewrite-pass tests: a routine and its rewrite, each run on the interpreter and the C
// backend from the same inputs, must agree bit for bit.
//
//   auto out = check_rewrite(request, rewritten_routine, {ids_bytes, table_bytes, {}});

#include <gtest/gtest.h>

#include "backends/run_util.h"
#include "cannl/ir/verify.h"

namespace cannl::opt::testing {

/// Verifies `after`, runs `before` and `after` on both backends, expects all four results equal,
/// and returns the reference buffers (the interpreter on `before`).
inline std::vector<test_util::Bytes> check_rewrite(const backends::CompileRequest& before,
                                                   const ir::LoweredRoutine& after,
                                                   const std::vector<test_util::Bytes>& inputs) {
  using test_util::run_on;
  ir::verify(after);
  const backends::CompileRequest rewritten{after, before.params};
  const auto reference = run_on(*backends::make_interpreter_backend(), before, inputs);
  EXPECT_EQ(run_on(*backends::make_interpreter_backend(), rewritten, inputs), reference);
  EXPECT_EQ(run_on(*test_util::cc(), before, inputs), reference);
  EXPECT_EQ(run_on(*test_util::cc(), rewritten, inputs), reference);
  return reference;
}

}  // namespace cannl::opt::testing
