/* cannl's own f32 exp and tanh: one fixed sequence of f32 operations (no libm call), so that the
   interpreter (which compiles this file as C++, src/ir/own_math.cpp), the generated scalar C (this
   text in its prelude) and the generated vector C (the lane-wise copy in src/codegen/c/simd.cpp)
   compute the same bits. Every multiply-add is an explicit fmaf; the other products (r * r, the
   scaling by 2^k) are never the operand of an addition, so no compiler can fuse them into one
   either; the selects read the same comparisons as the vector lane masks.
   Needs <math.h> (fmaf), <stdint.h> and <string.h> (memcpy) before it. */

/* e^x: k = round(x / ln 2) by the 1.5 * 2^23 shifter, r = x - k ln 2 in two fmaf steps
   (Cody-Waite), e^r on |r| <= ln 2 / 2 as 1 + r + r^2 P(r) (Cephes' minimax P), then the scaling by
   2^(k/2) and 2^(k - k/2), each a normal float, so that a subnormal result is rounded once.
   Below -104 the result is 0, above 89 +inf (x is clamped into [-104, 89] first); NaN passes. */
static inline float cannl_expf(float x) {
  float c = x > -104.0f ? x : -104.0f; /* NaN: -104, replaced by the NaN at the end */
  c = c < 89.0f ? c : 89.0f;
  const float t = fmaf(c, 1.44269502f, 12582912.0f);
  const float k = t - 12582912.0f;
  float r = fmaf(k, -0.693145752f, c);
  r = fmaf(k, -1.42860677e-06f, r);
  float p = 1.98756915e-4f;
  p = fmaf(p, r, 1.39819995e-3f);
  p = fmaf(p, r, 8.33345190e-3f);
  p = fmaf(p, r, 4.16657959e-2f);
  p = fmaf(p, r, 1.66666655e-1f);
  p = fmaf(p, r, 5.00000012e-1f);
  const float e = fmaf(p, r * r, r) + 1.0f;
  int32_t bits;
  memcpy(&bits, &t, sizeof bits);
  const int32_t ki = bits - 0x4B400000; /* t's low bits hold k: in [-150, 128] */
  const int32_t k1 = ki >> 1;           /* arithmetic shift: GCC and Clang define it so */
  const int32_t k2 = ki - k1;
  const int32_t b1 = (k1 + 127) << 23, b2 = (k2 + 127) << 23;
  float s1, s2;
  memcpy(&s1, &b1, sizeof s1);
  memcpy(&s2, &b2, sizeof s2);
  const float result = (e * s1) * s2;
  return x != x ? x + x : result;
}

/* tanh(x) with the sign of x on a = |x|: below 0.625, a + a^3 P(a^2) (Cephes' minimax P, no
   cancellation); above, 1 - 2 / (e^(2a) + 1) with a clamped to 10 (tanh rounds to 1 beyond 9.01)
   and e^(2a) by the steps of cannl_expf, scaled by adding k to the exponent field (normal there).
   NaN passes. */
static inline float cannl_tanhf(float x) {
  uint32_t xbits;
  memcpy(&xbits, &x, sizeof xbits);
  const uint32_t abits = xbits & 0x7FFFFFFFu;
  float a;
  memcpy(&a, &abits, sizeof a);
  const float z = a * a;
  float p = -5.70498872745e-3f;
  p = fmaf(p, z, 2.06390887954e-2f);
  p = fmaf(p, z, -5.37397155531e-2f);
  p = fmaf(p, z, 1.33314422036e-1f);
  p = fmaf(p, z, -3.33332819422e-1f);
  const float small = fmaf(p * z, a, a);
  const float b = a < 10.0f ? a : 10.0f; /* NaN: 10, replaced by the NaN at the end */
  const float d = b + b;
  const float t = fmaf(d, 1.44269502f, 12582912.0f);
  const float k = t - 12582912.0f;
  float r = fmaf(k, -0.693145752f, d);
  r = fmaf(k, -1.42860677e-06f, r);
  float q = 1.98756915e-4f;
  q = fmaf(q, r, 1.39819995e-3f);
  q = fmaf(q, r, 8.33345190e-3f);
  q = fmaf(q, r, 4.16657959e-2f);
  q = fmaf(q, r, 1.66666655e-1f);
  q = fmaf(q, r, 5.00000012e-1f);
  const float e = fmaf(q, r * r, r) + 1.0f;
  int32_t tbits, ebits;
  memcpy(&tbits, &t, sizeof tbits);
  memcpy(&ebits, &e, sizeof ebits);
  const int32_t scaled = ebits + ((tbits - 0x4B400000) << 23); /* k in [0, 29] */
  float exp2a;
  memcpy(&exp2a, &scaled, sizeof exp2a);
  const float large = 1.0f - 2.0f / (exp2a + 1.0f);
  const float magnitude = a < 0.625f ? small : large;
  uint32_t mbits;
  memcpy(&mbits, &magnitude, sizeof mbits);
  const uint32_t rbits = mbits | (xbits & 0x80000000u);
  float result;
  memcpy(&result, &rbits, sizeof result);
  return x != x ? x + x : result;
}
