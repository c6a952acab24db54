// Prelude helpers: narrow float codecs (f16, bf16, fp8 E5M2, and tf32 for rounding only) written
// in C, and the roundings of mixed-precision operands built on them.
//
// This is an implementation independent of the C++ codecs in src/support (the two are tested
// against each other). Narrowing rounds the exact value to nearest, ties to even, in one step from
// f64; an f32 input is widened to f64 first, which is exact, so f32 and f64 inputs round alike.
// Subnormals and signed zeros are kept; NaN stays NaN (quieted, top payload bits kept, as the x86
// F16C instructions do, both ways: widening quiets a signaling NaN too, as src/support does);
// f16 and bf16 overflow to infinity, fp8 saturates finite values to 57344.
#include "codegen/clike/prelude.h"

#include <cstdio>

namespace cannl::codegen {

namespace {

// Encodes d in a binary format with `mbits` mantissa and `ebits` exponent bits (sign on top).
constexpr const char* kNarrowFromF64 = R"(/* Round d to a float format with mbits mantissa and ebits exponent bits (RNE). */
$P uint32_t cannl_narrow_from_f64(double d, int mbits, int ebits, int saturate) {
  const uint64_t x = (uint64_t)cannl_bits_of_f64(d);
  const uint32_t sign = (uint32_t)(x >> 63) << (mbits + ebits);
  const uint64_t ax = x & 0x7fffffffffffffffull;
  const uint32_t inf = ((1u << ebits) - 1u) << mbits;
  if (ax > 0x7ff0000000000000ull) /* NaN: quiet, keep the top payload bits */
    return sign | inf | (1u << (mbits - 1)) | (uint32_t)((ax >> (52 - mbits)) & ((1u << mbits) - 1u));
  if (ax == 0x7ff0000000000000ull) return sign | inf;
  const int biased = (int)(ax >> 52);
  if (biased == 0) return sign; /* zero or f64 subnormal: far below every narrow subnormal */
  const int bias = (1 << (ebits - 1)) - 1;
  const int exponent = biased - 1023 + bias; /* target exponent field if normal */
  const uint64_t m = (ax & 0xfffffffffffffull) | (1ull << 52);
  const int shift = (52 - mbits) + (exponent >= 1 ? 0 : 1 - exponent);
  if (shift >= 54) return sign; /* below half the smallest subnormal */
  uint64_t q = m >> shift;
  const uint64_t rem = m & ((1ull << shift) - 1u);
  const uint64_t halfway = 1ull << (shift - 1);
  if (rem > halfway || (rem == halfway && (q & 1u) != 0)) ++q;
  /* q carries the implicit bit, which adds one to the exponent field: */
  const uint64_t bits = exponent >= 1 ? ((uint64_t)(exponent - 1) << mbits) + q : q;
  if (bits >= inf) return sign | (saturate ? inf - 1u : inf);
  return sign | (uint32_t)bits;
}
)";

constexpr const char* kNarrowToF32 = R"(/* Widen a float format with mbits mantissa and ebits exponent bits to f32 (exact). */
$P float cannl_narrow_to_f32(uint32_t bits, int mbits, int ebits) {
  const uint32_t sign = (bits >> (mbits + ebits)) & 1u;
  const uint32_t e = (bits >> mbits) & ((1u << ebits) - 1u);
  const uint32_t m = bits & ((1u << mbits) - 1u);
  const int bias = (1 << (ebits - 1)) - 1;
  uint32_t out;
  if (e == (1u << ebits) - 1u) {
    out = 0x7f800000u | (m << (23 - mbits)) | (m != 0u ? 0x400000u : 0u); /* inf, or NaN quieted with its payload */
  } else if (e == 0) {
    const float v = ldexpf((float)m, 1 - bias - mbits); /* subnormal (or zero): exact */
    return sign ? -v : v;
  } else {
    out = ((e - (uint32_t)bias + 127u) << 23) | (m << (23 - mbits));
  }
  out |= sign << 31;
  return cannl_f32_of_bits((int32_t)out);
}
)";

struct Format {
  const char* tag;      // f16, bf16, fp8
  const char* storage;  // uint16_t, uint8_t
  int mbits;
  int ebits;
  int saturate;
};

void append_format(std::vector<PreludeHelper>& out, const Format& f) {
  const std::string tag = f.tag;
  const std::string st = f.storage;
  const std::string args = std::to_string(f.mbits) + ", " + std::to_string(f.ebits);
  const std::string from64 = "cannl_f64_to_" + tag;
  out.push_back({from64,
                 "$P " + st + " " + from64 + "(double x) { return (" + st +
                     ")cannl_narrow_from_f64(x, " + args + ", " + std::to_string(f.saturate) +
                     "); }\n",
                 {"cannl_narrow_from_f64"}});
  const std::string from32 = "cannl_f32_to_" + tag;
  out.push_back({from32,
                 "$P " + st + " " + from32 + "(float x) { return " + from64 +
                     "((double)x); } /* exact widening, one rounding */\n",
                 {from64}});
  const std::string to32 = "cannl_" + tag + "_to_f32";
  out.push_back({to32,
                 "$P float " + to32 + "(" + st + " bits) { return cannl_narrow_to_f32(bits, " +
                     args + "); }\n",
                 {"cannl_narrow_to_f32"}});
}

/// cannl_round_<tag>f(float) and cannl_round_<tag>(double): the value on the format's grid,
/// widened back (the support layer's round_to_<tag>); mixed-precision contractions call them on
/// their operands, so a reader of the generated code sees where each rounding happens.
void append_rounding(std::vector<PreludeHelper>& out, const std::string& tag,
                     const std::string& narrow_f32, const std::string& narrow_f64,
                     const std::string& widen, const std::vector<std::string>& deps) {
  const std::string name = "cannl_round_" + tag;
  out.push_back({name + "f", "$P float " + name + "f(float x) { return " + widen + "(" + narrow_f32 +
                                 "(x)); }\n", deps});
  out.push_back({name, "$P double " + name + "(double x) { return (double)" + widen + "(" +
                           narrow_f64 + "(x)); }\n", deps});
}

/// The f32 rounding of a format with f32's exponent and 23 - `dropped` mantissa bits, on the
/// bits: adding half an ulp minus one, plus the kept last bit, carries exactly when the dropped
/// bits are above half an ulp or a tie with an odd last bit (ties to even); a carry out of the
/// mantissa steps the exponent, and out of the largest finite values makes infinity; f32
/// subnormals round on the same grid as the format's. NaNs go through the codec, which quiets
/// them, so both spellings give the codec's bits for every input.
PreludeHelper same_exponent_rounding(const std::string& name, int dropped, const std::string& codec) {
  const unsigned half_minus_one = (1u << (dropped - 1)) - 1u;
  const unsigned keep = ~((1u << dropped) - 1u);
  char text[640];
  std::snprintf(text, sizeof text,
                "$P float %s(float x) {\n"
                "  uint32_t u = (uint32_t)cannl_bits_of_f32(x);\n"
                "  if ((u & 0x7fffffffu) > 0x7f800000u) return %s_to_f32(cannl_f32_to_%s(x)); /* NaN */\n"
                "  u += 0x%xu + ((u >> %d) & 1u); /* round to nearest even */\n"
                "  return cannl_f32_of_bits((int32_t)(u & 0x%xu));\n"
                "}\n",
                name.c_str(), codec.c_str(), codec.substr(6).c_str(), half_minus_one, dropped, keep);
  return {name, text,
          {"cannl_bits_of_f32", "cannl_f32_of_bits", codec + "_to_f32", "cannl_f32_to_" + codec.substr(6)}};
}

}  // namespace

void append_float_codec_helpers(std::vector<PreludeHelper>& out) {
  out.push_back({"cannl_narrow_from_f64", kNarrowFromF64, {"cannl_bits_of_f64"}});
  out.push_back({"cannl_narrow_to_f32", kNarrowToF32, {"cannl_f32_of_bits"}});
  append_format(out, {"f16", "uint16_t", 10, 5, 0});
  append_format(out, {"bf16", "uint16_t", 7, 8, 0});
  append_format(out, {"fp8", "uint8_t", 2, 5, 1});
  append_format(out, {"tf32", "uint32_t", 10, 8, 0});
  for (const char* tag : {"f16", "bf16", "tf32", "fp8"}) {
    const std::string t = tag;
    append_rounding(out, t, "cannl_f32_to_" + t, "cannl_f64_to_" + t, "cannl_" + t + "_to_f32",
                    {"cannl_f32_to_" + t, "cannl_f64_to_" + t, "cannl_" + t + "_to_f32"});
  }
  // bf16 and tf32 keep f32's exponent, so their f32 roundings are integer additions on the bits,
  // a few instructions instead of a codec call (they run once per factor of a product):
  for (auto& h : out) {
    if (h.name == "cannl_round_bf16f") h = same_exponent_rounding(h.name, 16, "cannl_bf16");
    if (h.name == "cannl_round_tf32f") h = same_exponent_rounding(h.name, 13, "cannl_tf32");
  }
}

}  // namespace cannl::codegen
