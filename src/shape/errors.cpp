// ShapeError messages: what failed, the operation, every shape involved and, for einsum specs,
// a caret under the offending axis label (STYLE.md "Errors").

#include "shape/errors.h"

#include <set>

#include "cannl/support/config.h"
#include "cannl/support/error.h"

namespace cannl::shape {
namespace {

int caret_position(const Origin& origin, const Dim* at, const Dim* at2, int spec_pos) {
  if (spec_pos >= 0) return spec_pos;
  for (const Dim* d : {at, at2})
    if (d && d->label_pos >= 0 && d->label_step == origin.step_id) return d->label_pos;
  return -1;
}

std::string describe_shapes(const Origin& origin) {
  std::string out;
  for (std::size_t i = 0; i < origin.shapes.size(); ++i) {
    if (!origin.shapes[i]) continue;
    const Shape& s = *origin.shapes[i];
    out += "\n  " + (i == 0 ? std::string("result") : "operand " + std::to_string(i)) + " '" +
           s.name + "': " + to_string(s);
  }
  return out;
}

/// The other pending operations that share a shape with the failing one (their constraints
/// meet in it), most recent first, at most max_shape_error_origins of them.
std::string conflicting_operations(const Origin& failing) {
  const auto limit = static_cast<std::size_t>(std::max<std::int64_t>(0, config::get_int("max_shape_error_origins")));
  std::set<const Shape*> mine;
  for (const auto& sh : failing.shapes) mine.insert(sh.get());
  std::vector<std::string> found;
  const auto& steps = state().steps;
  for (auto it = steps.rbegin(); it != steps.rend(); ++it) {
    if (!it->pending) continue;
    const int id = static_cast<int>(steps.rend() - it) - 1;
    if (id == failing.step_id || std::holds_alternative<Terminal>(it->step.logic)) continue;
    bool shares = mine.count(it->step.result.get()) > 0;
    for (const auto& o : it->step.operands) shares = shares || mine.count(o.get()) > 0;
    if (!shares) continue;
    const auto* e = std::get_if<Einsum>(&it->step.logic);
    found.push_back("'" + it->step.op_name + "'" + (e ? " (" + e->spec + ")" : ""));
  }
  if (found.empty() || limit == 0) return "";
  std::string out = "\nother operations constraining these shapes:";
  for (std::size_t i = 0; i < found.size() && i < limit; ++i) out += "\n  " + found[i];
  if (found.size() > limit) out += "\n  ... and " + std::to_string(found.size() - limit) + " more";
  return out;
}

}  // namespace

void shape_fail(const Origin* origin, const std::string& what, const Dim* at, const Dim* at2,
                int spec_pos) {
  if (!origin) throw ShapeError(what);
  std::string msg = what + " in operation '" + origin->op_name + "'" + describe_shapes(*origin) +
                    conflicting_operations(*origin);
  if (!origin->spec.empty()) {
    const int pos = caret_position(*origin, at, at2, spec_pos);
    if (pos >= 0)
      msg += "\nat position " + std::to_string(pos) + " in einsum spec:\n" +
             caret_excerpt(origin->spec, pos);
    else
      msg += "\nin einsum spec: " + origin->spec;
  }
  throw ShapeError(msg);
}

}  // namespace cannl::shape
