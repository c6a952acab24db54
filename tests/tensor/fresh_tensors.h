#pragma once
// The state a tensor-building test starts from: no tensors of an earlier test, node ids from
// the start, `default_prec` set; the config overrides cleared after it. A fixture member, so
// each test gets its own (gtest makes a fixture object per test).
//
//   class Gradient : public testing::Test { testing_util::FreshTensors fresh_{"f64"}; };

#include "cannl/support/config.h"
#include "cannl/tensor/tensor.h"

namespace cannl::testing_util {

class FreshTensors {
 public:
  explicit FreshTensors(const char* default_prec) {
    reset_tensor_state();
    config::set_override("default_prec", default_prec);
  }
  ~FreshTensors() { config::clear_overrides(); }
  FreshTensors(const FreshTensors&) = delete;
  FreshTensors& operator=(const FreshTensors&) = delete;
};

}  // namespace cannl::testing_util
