// Tensor node sizes: element and byte counts past int64 are a ShapeError naming the tensor, never
// a wrapped (tiny or negative) size that a buffer would be allocated with.
#include <gtest/gtest.h>

#include "cannl/ir/tensor_node.h"
#include "cannl/support/error.h"

namespace cannl::ir {
namespace {

TEST(TensorNodeSize, CountsElementsAndBytes) {
  auto node = make_node("w", DType::F32, {3, 4});
  EXPECT_EQ(node->num_elements(), 12);
  EXPECT_EQ(node->size_in_bytes(), 48u);
  EXPECT_EQ(make_node("s", DType::F64)->size_in_bytes(), 8u);
}

TEST(TensorNodeSize, OverflowIsAShapeErrorNamingTheTensor) {
  auto elements = make_node("huge", DType::F32, {std::int64_t{1} << 32, std::int64_t{1} << 32});
  try {
    elements->num_elements();
    ADD_FAILURE() << "2^64 elements counted";
  } catch (const ShapeError& e) {
    EXPECT_NE(std::string(e.what()).find("'huge'"), std::string::npos) << e.what();
  }
  // 2^62 elements fit; 2^62 f32 values do not fit in 2^63 bytes.
  auto bytes = make_node("wide", DType::F32, {std::int64_t{1} << 62});
  EXPECT_EQ(bytes->num_elements(), std::int64_t{1} << 62);
  EXPECT_THROW(bytes->size_in_bytes(), ShapeError);
}

}  // namespace
}  // namespace cannl::ir
