// Prelude helpers: the uint4x32 type and conversions, threefry4x32 (Random123) and uniform1.
//
// Threefry follows Salmon et al., "Parallel random numbers: as easy as 1, 2, 3" (SC'11), with the
// Random123 rotation constants and key schedule; the light variant is JAX-style: 2 rounds then one
// key injection.
#include "codegen/clike/prelude.h"

namespace cannl::codegen {

namespace {

constexpr const char* kU4x32 =
    "/* 128 bits: PRNG key, counter and state; v[0] is the lowest word. */\n"
    "typedef struct cannl_u4x32 { uint32_t v[4]; } cannl_u4x32;\n";

constexpr const char* kFromU64 =
    "$P cannl_u4x32 cannl_u64_to_u4x32(uint64_t x) {\n"
    "  cannl_u4x32 r = {{(uint32_t)x, (uint32_t)(x >> 32), 0u, 0u}};\n"
    "  return r;\n"
    "}\n";

constexpr const char* kToU64 =
    "$P uint64_t cannl_u4x32_to_u64(cannl_u4x32 x) { return ((uint64_t)x.v[1] << 32) | x.v[0]; }\n";

constexpr const char* kRotl =
    "$P uint32_t cannl_rotl32(uint32_t x, int r) { return (x << r) | (x >> (32 - r)); }\n";

constexpr const char* kRounds = R"(/* Threefry-4x32 with `rounds` rounds and a key injection after every fourth. */
$P cannl_u4x32 cannl_threefry4x32_rounds(cannl_u4x32 key, cannl_u4x32 ctr, int rounds, int final_injection) {
  const int rot[8][2] = {{10, 26}, {11, 21}, {13, 27}, {23, 5}, {6, 20}, {17, 11}, {25, 10}, {18, 20}};
  uint32_t ks[5];
  ks[4] = 0x1BD11BDAu;
  for (int i = 0; i < 4; ++i) { ks[i] = key.v[i]; ks[4] ^= key.v[i]; }
  uint32_t x[4];
  for (int i = 0; i < 4; ++i) x[i] = ctr.v[i] + ks[i];
  for (int r = 0; r < rounds; ++r) {
    if (r % 2 == 0) {
      x[0] += x[1]; x[1] = cannl_rotl32(x[1], rot[r % 8][0]); x[1] ^= x[0];
      x[2] += x[3]; x[3] = cannl_rotl32(x[3], rot[r % 8][1]); x[3] ^= x[2];
    } else {
      x[0] += x[3]; x[3] = cannl_rotl32(x[3], rot[r % 8][0]); x[3] ^= x[0];
      x[2] += x[1]; x[1] = cannl_rotl32(x[1], rot[r % 8][1]); x[1] ^= x[2];
    }
    const int s = (r % 4 == 3) ? (r + 1) / 4 : (r == rounds - 1 ? final_injection : 0);
    if (s != 0) {
      for (int i = 0; i < 4; ++i) x[i] += ks[(s + i) % 5];
      x[3] += (uint32_t)s;
    }
  }
  cannl_u4x32 out = {{x[0], x[1], x[2], x[3]}};
  return out;
}
)";

constexpr const char* kCrypto =
    "$P cannl_u4x32 cannl_threefry4x32_crypto(cannl_u4x32 key, cannl_u4x32 ctr) {\n"
    "  return cannl_threefry4x32_rounds(key, ctr, 20, 0);\n"
    "}\n";

constexpr const char* kLight =
    "/* JAX-style light variant: 2 rounds, then one key injection (s = 1). */\n"
    "$P cannl_u4x32 cannl_threefry4x32_light(cannl_u4x32 key, cannl_u4x32 ctr) {\n"
    "  return cannl_threefry4x32_rounds(key, ctr, 2, 1);\n"
    "}\n";

constexpr const char* kUniformF32 =
    "/* Uniform in [0, 1): the top 24 bits of the lowest word. */\n"
    "$P float cannl_uniform1_f32(cannl_u4x32 x) { return (float)(x.v[0] >> 8) * 0x1p-24f; }\n";

constexpr const char* kUniformF64 =
    "/* Uniform in [0, 1): the top 53 bits of the low 64 bits. */\n"
    "$P double cannl_uniform1_f64(cannl_u4x32 x) {\n"
    "  return (double)(cannl_u4x32_to_u64(x) >> 11) * 0x1p-53;\n"
    "}\n";

}  // namespace

void append_random_helpers(std::vector<PreludeHelper>& out) {
  out.push_back({"cannl_u4x32", kU4x32, {}});
  out.push_back({"cannl_u64_to_u4x32", kFromU64, {"cannl_u4x32"}});
  out.push_back({"cannl_u4x32_to_u64", kToU64, {"cannl_u4x32"}});
  out.push_back({"cannl_rotl32", kRotl, {}});
  out.push_back({"cannl_threefry4x32_rounds", kRounds, {"cannl_u4x32", "cannl_rotl32"}});
  out.push_back({"cannl_threefry4x32_crypto", kCrypto, {"cannl_threefry4x32_rounds"}});
  out.push_back({"cannl_threefry4x32_light", kLight, {"cannl_threefry4x32_rounds"}});
  out.push_back({"cannl_uniform1_f32", kUniformF32, {"cannl_u4x32"}});
  out.push_back({"cannl_uniform1_f64", kUniformF64, {"cannl_u4x32", "cannl_u4x32_to_u64"}});
}

}  // namespace cannl::codegen
