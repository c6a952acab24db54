// PassContext from config, placement names, decision text.
#include "cannl/opt/pass.h"

#include <cstdint>

#include "cannl/support/config.h"

namespace cannl::opt {

PassContext PassContext::from_config(const std::string& routine_name) {
  PassContext ctx;
  ctx.routine_name = routine_name;
  ctx.max_inline_reduction = config::get_int_in("virtualize_max_inline_reduction", 0, INT64_MAX);
  ctx.max_inline_fanin = static_cast<int>(config::get_int_in("virtualize_max_inline_fanin", 0, INT32_MAX));
  ctx.max_visits = static_cast<int>(config::get_int_in("virtualize_max_visits", 0, INT32_MAX));
  ctx.stack_threshold_bytes = config::get_int("stack_threshold_in_bytes");
  ctx.fuse_multiply_add = config::get_bool("fuse_multiply_add");
  return ctx;
}

std::string_view placement_name(Placement p) {
  switch (p) {
    case Placement::Virtual: return "virtual";
    case Placement::Local: return "local";
    case Placement::OnDevice: return "on-device";
  }
  return "?";
}

std::string describe_decision(const Decision& d) {
  std::string out(placement_name(d.placement));
  out += " (" + std::to_string(d.provenance);
  if (!d.reason.empty()) out += ": " + d.reason;
  return out + ")";
}

}  // namespace cannl::opt
