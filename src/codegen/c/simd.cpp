// Explicit SIMD prelude helpers of the C dialect (see simd.h).
#include "codegen/c/simd.h"

#include "cannl/ir/target.h"
#include <cstdio>

#include "cannl/support/error.h"

namespace cannl::codegen {

SimdWidth simd_width(int bytes) {
  internal_check(bytes == 16 || bytes == 32 || bytes == 64,
                 [&] { return "simd: vector width must be 16, 32 or 64 bytes, got " + std::to_string(bytes); });
  const int lanes = bytes / 4;
  return {bytes, lanes, "cannl_f32x" + std::to_string(lanes)};
}

GemmBlocking gemm_blocking(const SimdWidth& w) {
  // The target record is the one place the kernel shape is decided (ir::cpu_target).
  return ir::cpu_target(w.bytes).gemm;
}

std::string gemm_function(const SimdWidth& w) { return "cannl_sgemm_x" + std::to_string(w.lanes); }

namespace {

// The fused multiply-add guarded by the macro that says the target has it: the GCC/Clang
// builtin that immintrin.h's _mm*_fmadd_ps wraps (including immintrin.h costs each compile a
// quarter of a second).
std::string fma_body(const SimdWidth& w) {
  std::string guard;
  std::string intrinsic;
  if (w.bytes == 64) {
    guard = "defined(__AVX512F__)";
    intrinsic = "__builtin_ia32_vfmaddps512_mask(a, b, c, (unsigned short)-1, 4 /* current rounding */)";
  } else if (w.bytes == 32) {
    guard = "defined(__AVX__) && defined(__FMA__)";
    intrinsic = "__builtin_ia32_vfmaddps256(a, b, c)";
  } else {
    guard = "defined(__FMA__)";
    intrinsic = "__builtin_ia32_vfmaddps(a, b, c)";
  }
  std::string s = "#if " + guard + "\n  return " + intrinsic + ";\n";
  if (w.bytes == 16) s += "#elif defined(__ARM_FEATURE_FMA)\n  return vfmaq_f32(c, a, b);\n";
  s += "#else\n  " + w.type + " r;\n  for (int l = 0; l < " + std::to_string(w.lanes) +
       "; ++l) r[l] = fmaf(a[l], b[l], c[l]);\n  return r;\n#endif\n";
  return s;
}

std::string type_text(const SimdWidth& w) {
  const std::string bytes = std::to_string(w.bytes);
  return "#if defined(__ARM_NEON)\n#include <arm_neon.h>\n#endif\n"
         "typedef float " + w.type + " __attribute__((vector_size(" + bytes + ")));\n"
         "/* Unaligned, aliasing view for loads and stores at any float address. */\n"
         "typedef float " + w.type + "u __attribute__((vector_size(" + bytes +
         "), aligned(4), __may_alias__));\n"
         "/* Lane masks of comparisons, and the bits of float lanes. */\n"
         "typedef int32_t cannl_i32x" + std::to_string(w.lanes) + " __attribute__((vector_size(" + bytes + ")));\n";
}

std::string splat_text(const SimdWidth& w) {
  std::string lanes;
  for (int l = 0; l < w.lanes; ++l) lanes += l ? ", x" : "x";
  return "$P " + w.type + " " + w.type + "_splat(float x) { return (" + w.type + "){" + lanes + "}; }\n";
}

std::string fma_text(const SimdWidth& w) {
  const std::string& t = w.type;
  return "/* a * b + c rounded once, on every target. */\n$P " + t + " " + t + "_fma(" + t + " a, " + t +
         " b, " + t + " c) {\n" + fma_body(w) + "}\n";
}

std::string hsum_text(const SimdWidth& w) {
  const std::string& t = w.type;
  return "/* Lanes summed in a fixed pairwise order. */\n$P float " + t + "_sum(" + t + " v) {\n"
         "  float h[" + std::to_string(w.lanes) + "];\n  memcpy(h, &v, sizeof h);\n"
         "  for (int w = " + std::to_string(w.lanes / 2) + "; w > 0; w /= 2)\n"
         "    for (int l = 0; l < w; ++l) h[l] += h[l + w];\n  return h[0];\n}\n";
}

// cannl_expf and cannl_tanhf of src/ir/own_math.c lane by lane: the same operations on the same
// constants, its selects as lane masks, so every lane has the scalar function's bits.
std::string own_math_text(const SimdWidth& w) {
  const std::string F = w.type, M = "cannl_i32x" + std::to_string(w.lanes);
  auto c = [&](const std::string& literal) { return F + "_splat(" + literal + ")"; };
  auto fma = [&](const std::string& a, const std::string& b, const std::string& d) {
    return F + "_fma(" + a + ", " + b + ", " + d + ")";
  };
  // v = m ? a : b, lane by lane.
  auto select = [&](const std::string& m, const std::string& a, const std::string& b) {
    return "(" + F + ")((" + m + " & (" + M + ")" + a + ") | (~" + m + " & (" + M + ")" + b + "))";
  };
  // e^r for |r| <= ln 2 / 2 after the reduction of `arg` (t, k, r, the polynomial, e).
  auto exp_steps = [&](const std::string& arg, const std::string& poly) {
    return "  const " + F + " t = " + fma(arg, c("1.44269502f"), c("12582912.0f")) + ";\n"
           "  const " + F + " k = t - " + c("12582912.0f") + ";\n"
           "  " + F + " r = " + fma("k", c("-0.693145752f"), arg) + ";\n"
           "  r = " + fma("k", c("-1.42860677e-06f"), "r") + ";\n"
           "  " + F + " " + poly + " = " + c("1.98756915e-4f") + ";\n"
           "  " + poly + " = " + fma(poly, "r", c("1.39819995e-3f")) + ";\n"
           "  " + poly + " = " + fma(poly, "r", c("8.33345190e-3f")) + ";\n"
           "  " + poly + " = " + fma(poly, "r", c("4.16657959e-2f")) + ";\n"
           "  " + poly + " = " + fma(poly, "r", c("1.66666655e-1f")) + ";\n"
           "  " + poly + " = " + fma(poly, "r", c("5.00000012e-1f")) + ";\n"
           "  const " + F + " e = " + fma(poly, "r * r", "r") + " + " + c("1.0f") + ";\n";
  };
  const std::string nan_passes =
      "  const " + M + " nan = x != x;\n  return " + select("nan", "(x + x)", "result") + ";\n}\n";
  return "/* cannl_expf lane by lane (the same operations, src/ir/own_math.c). */\n"
         "$P " + F + " " + F + "_exp(" + F + " x) {\n"
         "  const " + M + " above = x > " + c("-104.0f") + ";\n"
         "  " + F + " clamped = " + select("above", "x", c("-104.0f")) + ";\n"
         "  const " + M + " below = clamped < " + c("89.0f") + ";\n"
         "  clamped = " + select("below", "clamped", c("89.0f")) + ";\n" +
         exp_steps("clamped", "p") +
         "  const " + M + " ki = (" + M + ")t - 0x4B400000;\n"
         "  const " + M + " k1 = ki >> 1;\n"
         "  const " + M + " k2 = ki - k1;\n"
         "  const " + F + " s1 = (" + F + ")((k1 + 127) << 23), s2 = (" + F + ")((k2 + 127) << 23);\n"
         "  const " + F + " result = (e * s1) * s2;\n" + nan_passes +
         "/* cannl_tanhf lane by lane (the same operations, src/ir/own_math.c). */\n"
         "$P " + F + " " + F + "_tanh(" + F + " x) {\n"
         "  const " + M + " xbits = (" + M + ")x;\n"
         "  const " + F + " a = (" + F + ")(xbits & 0x7FFFFFFF);\n"
         "  const " + F + " z = a * a;\n"
         "  " + F + " p = " + c("-5.70498872745e-3f") + ";\n"
         "  p = " + fma("p", "z", c("2.06390887954e-2f")) + ";\n"
         "  p = " + fma("p", "z", c("-5.37397155531e-2f")) + ";\n"
         "  p = " + fma("p", "z", c("1.33314422036e-1f")) + ";\n"
         "  p = " + fma("p", "z", c("-3.33332819422e-1f")) + ";\n"
         "  const " + F + " small = " + fma("p * z", "a", "a") + ";\n"
         "  const " + M + " under = a < " + c("10.0f") + ";\n"
         "  const " + F + " b = " + select("under", "a", c("10.0f")) + ";\n"
         "  const " + F + " d = b + b;\n" +
         exp_steps("d", "q") +
         "  const " + F + " exp2a = (" + F + ")((" + M + ")e + (((" + M + ")t - 0x4B400000) << 23));\n"
         "  const " + F + " large = " + c("1.0f") + " - " + c("2.0f") + " / (exp2a + " + c("1.0f") + ");\n"
         "  const " + M + " near = a < " + c("0.625f") + ";\n"
         "  const " + M + " magnitude = (near & (" + M + ")small) | (~near & (" + M + ")large);\n"
         "  const " + F + " result = (" + F + ")(magnitude | (xbits & (-2147483647 - 1)));\n" + nan_passes;
}

// The mixed-precision roundings (cannl_round_bf16f, _tf32f, _f16f of the prelude) lane by lane.
// bf16 and tf32 keep f32's exponent: the same integer addition on the bits as the scalar helpers
// (half an ulp minus one plus the kept last bit, then the dropped bits cleared), and a NaN lane
// takes what the codec gives, the quiet bit set and the dropped bits cleared. f16 narrows the
// exponent too (subnormals, overflow): each lane calls the scalar helper.
std::string same_exponent_rounding_text(const SimdWidth& w, const std::string& tag, int dropped) {
  const std::string F = w.type, M = "cannl_i32x" + std::to_string(w.lanes);
  char masks[160];
  std::snprintf(masks, sizeof masks, "0x%xu + ((u >> %d) & 1u)) & 0x%xu;\n  const cannl_u q = (u | 0x00400000u) & 0x%xu;\n",
                (1u << (dropped - 1)) - 1u, dropped, ~((1u << dropped) - 1u), ~((1u << dropped) - 1u));
  return "/* cannl_round_" + tag + "f lane by lane (the same bit arithmetic; NaNs as the codec makes them). */\n"
         "$P " + F + " " + F + "_round_" + tag + "(" + F + " x) {\n"
         "  typedef uint32_t cannl_u __attribute__((vector_size(" + std::to_string(w.bytes) + ")));\n"
         "  const cannl_u u = (cannl_u)x;\n"
         "  const " + M + " nan = (" + M + ")((u & 0x7fffffffu) > 0x7f800000u);\n"
         "  const cannl_u r = (u + " + masks +
         "  return (" + F + ")((nan & (" + M + ")q) | (~nan & (" + M + ")r));\n}\n";
}

std::string lane_call_text(const SimdWidth& w, const std::string& tag) {
  const std::string& F = w.type;
  return "/* cannl_round_" + tag + "f on each lane. */\n$P " + F + " " + F + "_round_" + tag + "(" + F + " x) {\n"
         "  " + F + " r;\n  for (int l = 0; l < " + std::to_string(w.lanes) + "; ++l) r[l] = cannl_round_" + tag +
         "f(x[l]);\n  return r;\n}\n";
}

// The declarations of the matmul kernel library's two functions (kernels/cannl_sgemm.c): the
// library is compiled once per width and flags and linked with the generated file.
std::string gemm_declarations(const SimdWidth& w) {
  const std::string name = gemm_function(w);
  return "/* The f32 matmul kernel library " + name + ", compiled once per vector width and compiler flags\n"
         "   and linked with this file. Each returns 0, or nonzero when it could not allocate its packing\n"
         "   buffers. */\n"
         "int " + name + "(int64_t m, int64_t n, int64_t k, float *d, int64_t drs, int64_t dcs,\n"
         "    const float *a, int64_t ars, int64_t acs, const float *b, int64_t brs, int64_t bcs, int fused,\n"
         "    int zero, int threads);\n"
         "int " + name + "_nd(int nr, const int64_t *rext, const int64_t *rd, const int64_t *ra,\n"
         "    int nc, const int64_t *cext, const int64_t *cd, const int64_t *cb,\n"
         "    int nk, const int64_t *kext, const int64_t *ka, const int64_t *kb,\n"
         "    float *d, const float *a, const float *b, int fused, int zero, int threads);\n";
}

}  // namespace

void append_simd_helpers(std::vector<PreludeHelper>& out, const SimdWidth& w) {
  const std::string& t = w.type;
  out.push_back({t, type_text(w), {}});
  out.push_back({t + "u", "", {t}});
  out.push_back({"cannl_i32x" + std::to_string(w.lanes), "", {t}});
  out.push_back({t + "_splat", splat_text(w), {t}});
  out.push_back({t + "_fma", fma_text(w), {t}});
  out.push_back({t + "_sum", hsum_text(w), {t}});
  out.push_back({t + "_exp", own_math_text(w), {t, t + "_splat", t + "_fma", "cannl_i32x" + std::to_string(w.lanes)}});
  out.push_back({t + "_tanh", "", {t + "_exp"}});
  const std::string mask = "cannl_i32x" + std::to_string(w.lanes);
  out.push_back({t + "_round_bf16", same_exponent_rounding_text(w, "bf16", 16), {t, mask}});
  out.push_back({t + "_round_tf32", same_exponent_rounding_text(w, "tf32", 13), {t, mask}});
  out.push_back({t + "_round_f16", lane_call_text(w, "f16"), {t, "cannl_round_f16f"}});
  out.push_back({gemm_function(w) + "_nd", "", {gemm_function(w)}});  // declared with the driver
  out.push_back({gemm_function(w), gemm_declarations(w), {}});
}

void append_parallel_helpers(std::vector<PreludeHelper>& out) {
  out.push_back({"cannl_omp", "#ifdef _OPENMP\n#include <omp.h>\n#endif\n", {}});
  out.push_back({"cannl_grid_chunks",
                 "/* Chunks of a Grid loop: `requested`, or 4 per pool thread; at most one per iteration. */\n"
                 "$P int64_t cannl_grid_chunks(int64_t extent, int64_t requested) {\n"
                 "  int64_t chunks = requested;\n"
                 "#ifdef _OPENMP\n  if (chunks <= 0) chunks = 4 * (int64_t)omp_get_max_threads();\n#endif\n"
                 "  if (chunks <= 0) chunks = 1;\n"
                 "  return chunks < extent ? chunks : extent;\n}\n",
                 {"cannl_omp"}});
  out.push_back({"cannl_zero_shared",
                 "/* memset of a large buffer, a contiguous piece per pool thread (alone when already in a\n"
                 "   parallel region or without OpenMP). */\n"
                 "$P void cannl_zero_shared(void *p, size_t bytes) {\n"
                 "#ifdef _OPENMP\n"
                 "  const int64_t pieces = omp_in_parallel() ? 1 : (int64_t)omp_get_max_threads();\n"
                 "  if (pieces > 1) {\n"
                 "    #pragma omp parallel for schedule(static)\n"
                 "    for (int64_t k = 0; k < pieces; ++k) {\n"
                 "      const size_t lo = bytes / 64 * (size_t)k / (size_t)pieces * 64;\n"
                 "      const size_t hi = k + 1 == pieces ? bytes : bytes / 64 * (size_t)(k + 1) / (size_t)pieces * 64;\n"
                 "      memset((char *)p + lo, 0, hi - lo);\n"
                 "    }\n"
                 "    return;\n"
                 "  }\n"
                 "#endif\n"
                 "  memset(p, 0, bytes);\n}\n",
                 {"cannl_omp"}});
}

}  // namespace cannl::codegen
