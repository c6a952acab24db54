#pragma once
// Test helpers: owned buffers for hand-built routines and error-message assertions.
//
//   TestMemory mem;  auto a = mem.add(make_node("a", DType::F32, {4}));
//   mem.fill<float>(a, {1, 2, 3, 4});  interp::run(routine, mem.buffers(), {});

#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "cannl/interp/interpreter.h"
#include "cannl/support/error.h"

namespace cannl::interp::testing {

/// Owns one zeroed byte vector per node, sized by the node's padded dims and dtype.
class TestMemory {
 public:
  ir::NodeRef add(ir::NodeRef node) {
    bytes_[node->id].assign(node->size_in_bytes(), std::byte{0});
    return node;
  }
  /// Writes `values` (storage format) from element 0 on.
  template <class T>
  void fill(const ir::NodeRef& node, const std::vector<T>& values) {
    auto& bytes = bytes_.at(node->id);
    EXPECT_LE(values.size() * sizeof(T), bytes.size());
    std::memcpy(bytes.data(), values.data(), values.size() * sizeof(T));
  }
  /// The whole buffer as T cells.
  template <class T>
  std::vector<T> read(const ir::NodeRef& node) const {
    const auto& bytes = bytes_.at(node->id);
    std::vector<T> out(bytes.size() / sizeof(T));
    std::memcpy(out.data(), bytes.data(), out.size() * sizeof(T));
    return out;
  }
  Buffers buffers() {
    Buffers result;
    for (auto& [id, bytes] : bytes_) result[id] = std::span<std::byte>(bytes);
    return result;
  }

 private:
  std::map<int, std::vector<std::byte>> bytes_;
};

/// Runs `body` and checks it throws InternalError whose message contains every substring.
template <class F>
void expect_internal_error(F body, const std::vector<std::string>& substrings) {
  try {
    body();
    ADD_FAILURE() << "expected InternalError";
  } catch (const InternalError& e) {
    for (const auto& s : substrings)
      EXPECT_NE(std::string(e.what()).find(s), std::string::npos)
          << "message '" << e.what() << "' lacks '" << s << "'";
  }
}

/// A routine with no statics around `body`.
inline ir::LoweredRoutine routine_of(ir::StmtRef body) {
  return ir::LoweredRoutine{"test_routine", std::move(body), {}};
}

}  // namespace cannl::interp::testing
