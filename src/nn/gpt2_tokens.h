#pragma once
// Internal check shared by GPT-2's whole-window forward and its cached step.

#include <cstdint>

namespace cannl::nn::detail {

/// Throws RuntimeUsageError naming the position when id is outside [0, vocab_size).
void check_token(std::int64_t id, std::int64_t position, std::int64_t vocab_size);

}  // namespace cannl::nn::detail
