// Token id sequences to padded/truncated host batches, and those batches as tensor literals.
#include "cannl/io/token_batches.h"

#include <gtest/gtest.h>

#include "cannl/runtime/context.h"
#include "cannl/support/error.h"
#include "cannl/tensor/autodiff.h"
#include "cannl/tensor/tensor.h"
#include "io/io_test_util.h"

namespace cannl::io {
namespace {

using testing_util::expect_error;
using Dims = std::vector<std::int64_t>;
using Values = std::vector<double>;

const std::vector<std::vector<TokenId>> kSequences{{5, 6, 7}, {8}};

TEST(TokenBatches, PadsAndTruncatesIdBatches) {
  HostBatch batch = token_id_batch(kSequences, {.length = 2, .pad_id = 9});
  EXPECT_EQ(batch.dims, (Dims{2, 2}));
  EXPECT_EQ(batch.values, (Values{5, 6, 8, 9}));
  EXPECT_EQ(batch.mask, (Values{1, 1, 1, 0}));

  batch = token_id_batch(kSequences, {.length = 4, .pad_id = 0, .keep_last = true, .pad_left = true});
  EXPECT_EQ(batch.values, (Values{0, 5, 6, 7, 0, 0, 0, 8}));
  EXPECT_EQ(batch.mask, (Values{0, 1, 1, 1, 0, 0, 0, 1}));

  batch = token_id_batch(kSequences, {.length = 2, .keep_last = true});
  EXPECT_EQ(batch.values, (Values{6, 7, 8, 0}));
}

TEST(TokenBatches, OneHotBatchesLeavePaddingZero) {
  HostBatch batch = one_hot_batch(std::vector<std::vector<TokenId>>{{2, 0}, {1}}, {.length = 2}, 3);
  EXPECT_EQ(batch.dims, (Dims{2, 2, 3}));
  EXPECT_EQ(batch.values, (Values{0, 0, 1, 1, 0, 0,  0, 1, 0, 0, 0, 0}));
  EXPECT_EQ(batch.mask, (Values{1, 1, 1, 0}));
}

TEST(TokenBatches, RejectsBadArguments) {
  expect_error<RuntimeUsageError>([] { one_hot_batch(kSequences, {.length = 3}, 7); },
                                  {"token id 7 of sequence 0 is outside [0, 7)"});
  expect_error<RuntimeUsageError>([] { token_id_batch(kSequences, {.length = 0}); }, {"length must be positive"});
  expect_error<RuntimeUsageError>([] { one_hot_batch(kSequences, {.length = 1}, 0); }, {"vocab_size must be positive"});
}

TEST(TokenBatches, FeedATensorLiteral) {
  reset_tensor_state();
  HostBatch batch = one_hot_batch(std::vector<std::vector<TokenId>>{{2, 0}, {1}}, {.length = 2}, 3);
  Tensor x = literal("tokens", batch.values,
                     {.batch = Dims{batch.dims[0], batch.dims[1]}, .output = Dims{batch.dims[2]}});
  Tensor counts = einsum("b,t|v => v", x);  // how often each token occurs in the batch
  auto ctx = runtime::Context::interpreter();
  auto routine = ctx.compile(forward_code({counts}), "count");
  ctx.set_values(x.value(), batch.values);
  ctx.run(routine);
  EXPECT_EQ(ctx.get_values(counts.value()), (Values{1, 1, 1}));
}

}  // namespace
}  // namespace cannl::io
