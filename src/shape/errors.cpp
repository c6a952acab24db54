// ShapeError messages: what failed, the operation, every shape involved and, for einsum specs,
// a caret under the offending axis label (STYLE.md "Errors").

#include "shape/errors.h"

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

}  // namespace

void shape_fail(const Origin* origin, const std::string& what, const Dim* at, const Dim* at2,
                int spec_pos) {
  if (!origin) throw ShapeError(what);
  std::string msg = what + " in operation '" + origin->op_name + "'" + describe_shapes(*origin);
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
