#pragma once
// The prelude of generated C-family code: helper functions (narrow-float codecs, saturating
// conversions, integer division, uint4x32 and threefry) emitted only when the body uses them.
//
// Each helper's text starts its definitions with `$P ` which the dialect replaces by its helper
// prefix (`static inline` in C, `__device__ static inline` in CUDA).
//
//   auto text = select_prelude(c_prelude_helpers(), body, "static inline");
//   // body mentions cannl_f32_to_f16 -> the generic narrowing helper and the codec are emitted

#include <string>
#include <string_view>
#include <vector>

namespace cannl::codegen {

/// One prelude entry: `name` is the identifier whose use in the body requires it.
struct PreludeHelper {
  std::string name;
  std::string text;
  std::vector<std::string> deps;
};

/// Every helper, dependencies before their users (emission order).
std::vector<PreludeHelper> c_prelude_helpers();

/// The helpers whose names occur as identifiers in `code`, with their transitive dependencies,
/// in list order, `$P` replaced by `helper_prefix`.
std::string select_prelude(const std::vector<PreludeHelper>& helpers, std::string_view code,
                           std::string_view helper_prefix);

// Pieces of c_prelude_helpers(), one file each.
void append_float_codec_helpers(std::vector<PreludeHelper>& out);
void append_integer_helpers(std::vector<PreludeHelper>& out);
void append_random_helpers(std::vector<PreludeHelper>& out);
void append_minmax_helpers(std::vector<PreludeHelper>& out);

}  // namespace cannl::codegen
