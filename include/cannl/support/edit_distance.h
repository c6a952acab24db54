#pragma once
// The edit (Levenshtein) distance between two short strings: how "did you mean" suggestions for
// config keys and command-line options pick the closest known name.
//
//   edit_distance("treads", "threads") == 1

#include <cstddef>
#include <string_view>

namespace cannl {

std::size_t edit_distance(std::string_view a, std::string_view b);

}  // namespace cannl
