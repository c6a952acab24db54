// libFuzzer target: any bytes as an einsum spec (and as a labels spec) must parse or throw a UserError
// (EinsumSyntaxError, ShapeError, ...), never crash, hang or trip a sanitizer. A spec that parses
// is also run through shape inference and projections over operands with closed rows sized from
// the input, so the solver sees every construct the parser accepts.
#include <cstddef>
#include <cstdint>
#include <string>

#include "cannl/shape/einsum_spec.h"
#include "cannl/shape/shape.h"
#include "cannl/support/error.h"

namespace {

using cannl::shape::RowSpec;

std::vector<std::int64_t> row_of(const RowSpec& r, std::uint32_t& seed) {
  std::vector<std::int64_t> dims;
  const std::size_t n = r.beg.size() + r.dims.size() + (r.has_ellipsis ? seed % 2 : 0);
  for (std::size_t i = 0; i < n; ++i) {
    seed = seed * 1103515245u + 12345u;
    dims.push_back(1 + (seed >> 16) % 6);
  }
  return dims;
}

void infer(const cannl::shape::EinsumSpec& spec, std::uint32_t seed) {
  namespace sh = cannl::shape;
  sh::reset();
  std::vector<sh::ShapeRef> operands;
  for (const auto& slot : spec.rhs) {
    auto s = sh::new_shape("x", {row_of(slot.batch, seed), row_of(slot.input, seed), row_of(slot.output, seed)});
    sh::propagate({"x", s, {}, sh::Terminal{}});
    operands.push_back(s);
  }
  auto result = sh::new_shape("result");
  const int step = sh::propagate({"einsum", result, operands, sh::Einsum{spec.text}});
  sh::finish_inference();
  (void)sh::dims(*result);
  (void)sh::block_projections(step);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size > 256) return 0;  // long specs add nothing but time
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const auto spec = cannl::shape::parse_einsum(text);
    if (spec.rhs.size() <= 4) infer(spec, static_cast<std::uint32_t>(size) * 2654435761u);
  } catch (const cannl::UserError&) {
    // expected for malformed or inconsistent specs
  }
  try {  // the same bytes as a labels spec: a shape, printed in both styles
    namespace sh = cannl::shape;
    sh::reset();
    auto shape = sh::new_shape_from_labels("labels", text);
    (void)sh::to_string(*shape);
    (void)sh::to_string(*shape, sh::PrintStyle::OnlyBases);
  } catch (const cannl::UserError&) {
  }
  return 0;
}
