#pragma once
// The fields of a target record the tuner varies (matmul blocking, tile threshold, team, Grid
// chunks, the GPU tile blocking), as text for logs, reports and cache entries, and back.
//
//   target_fields_text(t) == "12 2 384 512 3072 4096 2 0"   // mr nv kc nc mc min_tile_work threads chunks
//   (a GPU target's end with its tile blocking: "... 0 gpu_tile 64 64 16 4 4", bm bn bk tm tn,
//   and with tensor cores their blocking: "... gpu_mma 128 128 32 64 32", bm bn bk wm wn)
//   ir::Target again = with_target_fields(backend_target, "12 2 384 512 3072 4096 2 0");

#include <optional>
#include <string>

#include "cannl/ir/target.h"

namespace cannl::tune {

std::string target_fields_text(const ir::Target& target);
/// `base` with the fields of `text` (target_fields_text's form); nullopt when malformed.
std::optional<ir::Target> with_target_fields(const ir::Target& base, const std::string& text);
/// A GPU tile blocking for people: "64x64x16 per thread 4x4" (bm x bn x bk, tm x tn); a
/// tensor-core blocking's tm x tn are per warp (`unit` "warp").
std::string describe_blocking(const ir::TileBlocking& blocking, const std::string& unit = "thread");
/// Every field of the record (the cache key's part for the target the search starts from).
std::string full_target_text(const ir::Target& target);
/// The config key that licenses re-association in `target`'s schedules, and so decides how a
/// candidate's results are checked and which licence the cache key records:
/// gpu_schedule_reassociate on a target with workgroups, else cpu_schedule_reassociate.
const char* reassociation_licence_key(const ir::Target& target);

}  // namespace cannl::tune
