// The mixed-precision roundings (round_bf16, round_tf32, round_f16) in Vectorized loops of the C
// backend: at every vector width, bitwise the support layer's codecs (the interpreter's
// rounding) on hard bit patterns (NaNs with payloads of both kinds and signs, infinities, zeros,
// subnormals, the largest finite values, exact ties with an even and an odd last kept bit, one
// ulp either side of a tie) and random bit patterns, with a remainder for every width.
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "backends/run_util.h"
#include "cannl/ir/loop_ir.h"
#include "cannl/support/float_codecs.h"

namespace cannl {
namespace {

using namespace ir;
using test_util::bytes_of;
using test_util::values_of;

float of_bits(std::uint32_t b) {
  float f;
  std::memcpy(&f, &b, sizeof f);
  return f;
}

std::uint32_t bits_of(float f) {
  std::uint32_t b;
  std::memcpy(&b, &f, sizeof b);
  return b;
}

// Bit patterns around the rounding points of a format that drops `dropped` mantissa bits.
void append_edges(std::vector<float>& out, int dropped) {
  const std::uint32_t half = 1u << (dropped - 1);
  for (const std::uint32_t base : {0x3f800000u, 0x3f810000u, 0x00000000u, 0x00800000u, 0x477fe000u, 0x7f7f0000u,
                                   0x33800000u, 0x38800000u, 0x387fc000u}) {
    for (const std::uint32_t keep_odd : {0u, 1u << dropped}) {
      for (const std::int64_t delta : {-1, 0, 1}) {
        const std::uint32_t b = base + keep_odd + static_cast<std::uint32_t>(static_cast<std::int64_t>(half) + delta);
        out.push_back(of_bits(b));
        out.push_back(of_bits(b | 0x80000000u));
      }
    }
  }
}

std::vector<float> samples(std::int64_t n) {
  std::vector<float> out;
  for (const std::uint32_t b : {0x00000000u, 0x80000000u, 0x7f800000u, 0xff800000u, 0x7fc00000u, 0xffc00000u,
                                0x7f800001u, 0xff800001u, 0x7fa5a5a5u, 0x7fffffffu, 0xffffffffu, 0x7fbfffffu,
                                0x00000001u, 0x807fffffu, 0x7f7fffffu, 0xff7fffffu, 0x7f7f8000u, 0x477ff000u,
                                0x477fefffu, 0x33000000u, 0x33000001u, 0x387fe000u})
    out.push_back(of_bits(b));
  for (const int dropped : {13, 16}) append_edges(out, dropped);
  std::mt19937 rng(7);
  std::uniform_int_distribution<std::uint32_t> bits;
  while (static_cast<std::int64_t>(out.size()) < n) out.push_back(of_bits(bits(rng)));
  out.resize(static_cast<std::size_t>(n));
  return out;
}

// b[i] = round_bf16(x[i]), t[i] = round_tf32(x[i]), h[i] = round_f16(x[i]); params x, b, t, h.
backends::CompileRequest roundings(std::int64_t n) {
  auto x = make_node("x", DType::F32, {n});
  auto b = make_node("b", DType::F32, {n}), t = make_node("t", DType::F32, {n}), h = make_node("h", DType::F32, {n});
  const Symbol i = fresh_symbol();
  const std::vector<AxisIndex> at{AxisIndex::iterator(i)};
  auto round = [&](Op op) { return apply(op, DType::F32, {get(x, at)}); };
  auto body = for_loop(i, 0, n,
                       seq({set(b, at, round(Op::RoundBf16)), set(t, at, round(Op::RoundTf32)),
                            set(h, at, round(Op::RoundF16))}),
                       AxisType::Vectorized);
  return {LoweredRoutine{"round_vector", body, {}}, {x, b, t, h}};
}

// The first sample where `got` differs in its bits from `round(x)`, or -1.
template <class Round>
std::int64_t first_difference(const std::vector<float>& x, const std::vector<float>& got, Round round) {
  for (std::size_t k = 0; k < x.size(); ++k)
    if (bits_of(got[k]) != bits_of(round(x[k]))) return static_cast<std::int64_t>(k);
  return -1;
}

TEST(CcRoundVector, RoundingsInVectorLoopsAreBitwiseTheCodecsAtEveryWidth) {
  test_util::ConfigGuard guard;
  constexpr std::int64_t n = 200'003;  // a remainder for every width
  const std::vector<float> x = samples(n);
  for (const char* bytes : {"16", "32", "64"}) {
    config::set_override("cc_vector_bytes", bytes);
    const auto request = roundings(n);
    const std::string source = test_util::cc()->compile(request)->source();
    EXPECT_NE(source.find("_round_bf16("), std::string::npos) << "not vectorized at " << bytes << " bytes";
    EXPECT_NE(source.find("_round_f16("), std::string::npos) << "not vectorized at " << bytes << " bytes";
    const auto out = test_util::run_on(*test_util::cc(), request, {bytes_of(x)});
    const auto at = [&](std::int64_t k) { return k < 0 ? std::string("none") : std::to_string(bits_of(x[static_cast<std::size_t>(k)])); };
    const std::int64_t bf16 = first_difference(x, values_of<float>(out[1]), [](float v) { return round_to_bf16(v); });
    const std::int64_t tf32 = first_difference(x, values_of<float>(out[2]), [](float v) { return round_to_tf32(v); });
    const std::int64_t f16 = first_difference(x, values_of<float>(out[3]), [](float v) { return round_to_f16(v); });
    EXPECT_EQ(bf16, -1) << bytes << "-byte vectors, bits " << at(bf16);
    EXPECT_EQ(tf32, -1) << bytes << "-byte vectors, bits " << at(tf32);
    EXPECT_EQ(f16, -1) << bytes << "-byte vectors, bits " << at(f16);
  }
}

}  // namespace
}  // namespace cannl
