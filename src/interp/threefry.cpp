// Threefry-4x32 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC'11; the
// Random123 reference algorithm) and the uniform1 bit-to-value mapping.
#include <cmath>

#include "cannl/interp/scalar_semantics.h"
#include "cannl/support/error.h"

namespace cannl::interp {

using ir::DType;
using ir::Uint4x32;

namespace {

// Rotation constants of Threefry-4x32, one pair per round modulo 8 (Random123).
constexpr int kRotations[8][2] = {{10, 26}, {11, 21}, {13, 27}, {23, 5},
                                  {6, 20},  {17, 11}, {25, 10}, {18, 20}};
// Skein's key-schedule parity constant for 32-bit words.
constexpr std::uint32_t kParity = 0x1BD11BDA;

std::uint32_t rotl(std::uint32_t x, int r) { return (x << r) | (x >> (32 - r)); }

// One round: even rounds mix (x0,x1),(x2,x3); odd rounds mix (x0,x3),(x2,x1).
void mix_round(std::uint32_t (&x)[4], int r) {
  const int* rot = kRotations[r % 8];
  if (r % 2 == 0) {
    x[0] += x[1];
    x[1] = rotl(x[1], rot[0]);
    x[1] ^= x[0];
    x[2] += x[3];
    x[3] = rotl(x[3], rot[1]);
    x[3] ^= x[2];
  } else {
    x[0] += x[3];
    x[3] = rotl(x[3], rot[0]);
    x[3] ^= x[0];
    x[2] += x[1];
    x[1] = rotl(x[1], rot[1]);
    x[1] ^= x[2];
  }
}

// Key injection number `s`: x[i] += ks[(s + i) % 5], and the injection count into x3.
void inject_key(std::uint32_t (&x)[4], const std::uint32_t (&ks)[5], std::uint32_t s) {
  for (int i = 0; i < 4; ++i) x[i] += ks[(s + i) % 5];
  x[3] += s;
}

// The extended key (ks[4] is the parity word) and the state after the initial key injection.
struct ThreefryState {
  std::uint32_t ks[5];
  std::uint32_t x[4];
};

ThreefryState start(const Uint4x32& key, const Uint4x32& counter) {
  ThreefryState s{};
  s.ks[4] = kParity;
  for (int i = 0; i < 4; ++i) {
    s.ks[i] = key.v[i];
    s.ks[4] ^= key.v[i];
  }
  for (int i = 0; i < 4; ++i) s.x[i] = counter.v[i] + s.ks[i];
  return s;
}

Uint4x32 words(const ThreefryState& s) { return Uint4x32{{s.x[0], s.x[1], s.x[2], s.x[3]}}; }

}  // namespace

Uint4x32 threefry4x32(Uint4x32 key, Uint4x32 counter, int rounds) {
  ThreefryState s = start(key, counter);
  for (int r = 0; r < rounds; ++r) {
    mix_round(s.x, r);
    if (r % 4 == 3) inject_key(s.x, s.ks, static_cast<std::uint32_t>((r + 1) / 4));
  }
  return words(s);
}

Uint4x32 threefry4x32_crypto(Uint4x32 key, Uint4x32 counter) {
  return threefry4x32(key, counter, 20);
}

// JAX-style light variant: two rounds, then the first key injection so the key still matters
// after so few rounds.
Uint4x32 threefry4x32_light(Uint4x32 key, Uint4x32 counter) {
  ThreefryState s = start(key, counter);
  mix_round(s.x, 0);
  mix_round(s.x, 1);
  inject_key(s.x, s.ks, 1);
  return words(s);
}

Value uniform1(Uint4x32 bits, DType dtype) {
  const std::uint64_t low64 = (static_cast<std::uint64_t>(bits.v[1]) << 32) | bits.v[0];
  switch (dtype) {
    case DType::F32:
    case DType::F16:
    case DType::BF16:
    case DType::FP8:
      // 24 random bits fill the f32 significand exactly: the f32 is in [0, 1). Narrow dtypes
      // round it (so values just below 1 may become 1).
      return convert(Value::of(static_cast<float>(bits.v[0] >> 8) * 0x1p-24f), dtype);
    case DType::F64: return Value::of(static_cast<double>(low64 >> 11) * 0x1p-53);
    case DType::I32: return Value::of(static_cast<std::int32_t>(bits.v[0]));
    case DType::U32: return Value::of(bits.v[0]);
    case DType::I64: return Value::of(static_cast<std::int64_t>(low64));
    case DType::U64: return Value::of(low64);
    case DType::U8: return Value::of(static_cast<std::uint8_t>(bits.v[0] & 0xFF));
    case DType::U4x32: break;
  }
  throw InternalError("uniform1: undefined for u4x32 results");
}

}  // namespace cannl::interp
