// Conversions between dtypes, buffer encoding/decoding and index arithmetic of the C-family
// printer. The rules are those of cannl/ir/loop_ir.h, which the interpreter follows too:
//  float->float rounds to nearest even (narrow targets through the codecs, from f64 directly);
//  int->float is a C cast (to narrow floats via f64); float->int truncates and saturates, NaN -> 0;
//  int->int wraps as a C cast; x->u4x32 is {low 32, high 32, 0, 0} of the value as int64;
//  u4x32->x takes the low 64 bits as u64, then converts.
#include <string>

#include "cannl/support/error.h"
#include "codegen/clike/body_printer.h"
#include "codegen/clike/expr_text.h"

namespace cannl::codegen {

using ir::DType;

namespace {

bool is_narrow(DType t) { return t == DType::F16 || t == DType::BF16 || t == DType::FP8; }

std::string tag(DType t) { return std::string(ir::dtype_name(t)); }

// `text` (a float or double value) encoded in narrow dtype `t`.
std::string encode_narrow(const std::string& text, DType from, DType t) {
  const char* width = from == DType::F64 ? "cannl_f64_to_" : "cannl_f32_to_";
  return width + tag(t) + "(" + text + ")";
}

}  // namespace

std::string BodyPrinter::convert(const Expr& e, DType to) const {
  const DType from = e.dtype;
  if (from == to) return e.text;
  if (to == DType::U4x32) {
    std::string as_u64;
    if (ir::is_float(from)) {
      as_u64 = c_cast("uint64_t", "cannl_f64_to_i64(" + e.text + ")");
    } else if (from == DType::U64) {
      as_u64 = e.text;
    } else if (from == DType::I64) {
      as_u64 = c_cast("uint64_t", e.text);
    } else {
      as_u64 = c_cast("uint64_t", c_cast("int64_t", e.text));
    }
    return "cannl_u64_to_u4x32(" + as_u64 + ")";
  }
  if (from == DType::U4x32) return convert({"cannl_u4x32_to_u64(" + e.text + ")", DType::U64}, to);
  if (is_narrow(to)) {
    // Round once into the narrow format, then hold the value as a float.
    const std::string encoded = ir::is_float(from)
                                    ? encode_narrow(e.text, from, to)
                                    : encode_narrow(c_cast("double", e.text), DType::F64, to);
    return "cannl_" + tag(to) + "_to_f32(" + encoded + ")";
  }
  if (ir::is_float(to)) {
    if (to == DType::F32 && is_narrow(from)) return e.text;  // already an exact float
    return c_cast(d_.value_type(to), e.text);
  }
  if (ir::is_float(from)) return "cannl_f64_to_" + tag(to) + "(" + e.text + ")";
  return c_cast(d_.value_type(to), e.text);
}

std::string BodyPrinter::store(const Expr& e, DType to) const {
  if (!is_narrow(to)) return convert(e, to);
  if (ir::is_float(e.dtype)) return encode_narrow(e.text, e.dtype, to);
  return encode_narrow(convert(e, DType::F64), DType::F64, to);  // ints via f64
}

std::string BodyPrinter::load(const std::string& element, DType t) const {
  if (!is_narrow(t)) return element;
  return "cannl_" + tag(t) + "_to_f32(" + element + ")";
}

std::string BodyPrinter::zero(DType t) const {
  if (t == DType::U4x32) return "{{0u, 0u, 0u, 0u}}";
  return "0";
}

std::string BodyPrinter::index(const ir::AxisIndex& at, bool wide) const {
  const bool widen = wide && options_.target.index_dtype != ir::DType::I64;
  std::string out;
  for (const auto& term : at.terms) {
    auto it = symbols_.find(term.symbol.id);
    internal_check(it != symbols_.end(), [&] {
      return "codegen: symbol s" + std::to_string(term.symbol.id) +
             " is used outside of any loop binding it and is not a static symbol";
    });
    const std::int64_t mag = term.coeff < 0 ? -term.coeff : term.coeff;
    const std::string symbol = widen ? c_cast("int64_t", it->second) : it->second;
    const std::string t = mag == 1 ? symbol : std::to_string(mag) + "*" + symbol;
    if (out.empty()) {
      out = term.coeff < 0 ? "-" + t : t;
    } else {
      out += (term.coeff < 0 ? " - " : " + ") + t;
    }
  }
  if (out.empty()) return at.offset < 0 ? "(" + std::to_string(at.offset) + ")" : std::to_string(at.offset);
  if (at.offset > 0) out += " + " + std::to_string(at.offset);
  if (at.offset < 0) out += " - " + std::to_string(-at.offset);
  return out;
}

std::string BodyPrinter::offset(const ir::TensorNode& node,
                                const std::vector<ir::AxisIndex>& idx) const {
  internal_check(idx.size() == node.dims.size(), [&] {
    return "codegen: node " + node.debug_name() + " has " + std::to_string(node.dims.size()) +
           " axes but is indexed with " + std::to_string(idx.size());
  });
  if (idx.empty()) return "0";
  // Horner form over the padded dims: ((i0)*d1 + i1)*d2 + i2 ...
  std::string out = idx.size() == 1 ? index(idx[0]) : "(" + index(idx[0]) + ")";
  for (std::size_t k = 1; k < idx.size(); ++k) {
    out = "(" + atom(out) + "*" + std::to_string(node.dims[k]) + " + " + index(idx[k]) + ")";
  }
  return out;
}

}  // namespace cannl::codegen
