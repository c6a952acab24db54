// Explicit SIMD prelude helpers of the C dialect (see simd.h).
#include "codegen/c/simd.h"

#include "cannl/ir/target.h"
#include "cannl/support/error.h"

namespace cannl::codegen {

SimdWidth simd_width(int bytes) {
  internal_check(bytes == 16 || bytes == 32 || bytes == 64,
                 "simd: vector width must be 16, 32 or 64 bytes, got " + std::to_string(bytes));
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
}

}  // namespace cannl::codegen
