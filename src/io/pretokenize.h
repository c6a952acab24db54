#pragma once
// GPT-2's pre-tokenization: text split into the pieces BPE merges within, by the pattern
//   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
// implemented by hand (no regex engine): at each position the first alternative that matches
// wins, quantifiers are greedy, and the only backtracking that matters, `\s+(?!\S)` giving back
// the last whitespace character before a non-space, is done explicitly. Bytes that are not valid
// UTF-8 count as one character of no class (so they join `[^\s\p{L}\p{N}]+` runs), which keeps
// every byte string tokenizable; valid UTF-8 splits exactly like the Python `regex` module.
//
//   pretokenize("Hello world's  end") == {"Hello", " world", "'s", " ", " end"}

#include <string_view>
#include <vector>

namespace cannl::io {

/// The pieces of `text`, in order; their concatenation is `text`.
std::vector<std::string_view> pretokenize(std::string_view text);

}  // namespace cannl::io
