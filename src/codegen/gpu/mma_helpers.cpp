// The warp-level tensor-core helpers of the CUDA and OpenCL dialects (mma_helpers.h).
#include "codegen/gpu/mma_helpers.h"

#include <functional>
#include <string>

#include "codegen/gpu/inline_ptx.h"
#include "codegen/gpu/mma_fragments.h"

namespace cannl::codegen {

namespace {

// mma.sync with f32 accumulators c[0..4) += a * b: four A registers and two B registers in both
// shapes (m16n8k16 16-bit, m16n8k8 tf32). Not volatile: it reads only its register operands.
std::string cuda_mma(const std::string& name, const std::string& instruction) {
  return device_only("$P void " + name + "(float* c, const uint32_t* a, const uint32_t* b) {\n"
         "  asm(\"" + instruction + " {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\"\n"
         "      : \"+f\"(c[0]), \"+f\"(c[1]), \"+f\"(c[2]), \"+f\"(c[3])\n"
         "      : \"r\"(a[0]), \"r\"(a[1]), \"r\"(a[2]), \"r\"(a[3]), \"r\"(b[0]), \"r\"(b[1]));\n"
         "}\n");
}

// ldmatrix .x4: volatile and clobbering memory, so that it stays between the barriers around the
// staged slice and reads what the plain stores before the barrier wrote there.
std::string cuda_ldmatrix(const std::string& name, const std::string& qualifiers) {
  return device_only("$P void " + name + "(uint32_t* r, const uint16_t* slice, int offset) {\n"
         "  const unsigned address = (unsigned)__cvta_generic_to_shared(slice + offset);\n"
         "  asm volatile(\"ldmatrix.sync.aligned.m8n8.x4" + qualifiers + ".shared.b16 {%0, %1, %2, %3}, [%4];\"\n"
         "               : \"=r\"(r[0]), \"=r\"(r[1]), \"=r\"(r[2]), \"=r\"(r[3]) : \"r\"(address) : \"memory\");\n"
         "}\n");
}

// A `__constant uchar` table of (row, column) pairs, `count` entries of `cell(entry)`.
std::string cell_table(const std::string& name, int count, const std::function<FragmentCell(int)>& cell) {
  std::string out = "__constant uchar " + name + "[" + std::to_string(2 * count) + "] = {";
  for (int q = 0; q < count; ++q) {
    const FragmentCell c = cell(q);
    out += (q % 16 == 0 ? "\n  " : " ") + std::to_string(c.row) + ", " + std::to_string(c.col) + ",";
  }
  return out + "\n};\n";
}

// The f16 conversions of the emulation, for values exact in f16 only (the operands a tensor-core
// tile stages): a few bit operations where the prelude's codecs round through f64, which PoCL
// would compile once per unrolled staging element.
constexpr const char* kEmulatedF16 = R"(/* The f16 bits of an f32 value exact in f16 (tensor-core staging, tests on OpenCL). */
$P uint16_t cannl_mma_f16_bits(float x) {
  const uint32_t u = as_uint(x), sign = (u >> 16) & 0x8000u, m = u & 0x7fffffu;
  const int e = (int)((u >> 23) & 0xffu);
  if (e == 0xff) return (uint16_t)(sign | 0x7c00u | (m != 0 ? 0x200u : 0u));
  if (e > 112) return (uint16_t)(sign | ((uint32_t)(e - 112) << 10) | (m >> 13));
  if (e < 103) return (uint16_t)sign;
  return (uint16_t)(sign | ((m | 0x800000u) >> (126 - e)));
}
)";

constexpr const char* kEmulatedInput = R"(/* An MMA input element (bits as the register holds them) as f32: 0 bf16, 1 f16, 2 tf32. */
$P float cannl_mma_input(uint32_t bits, int format) {
  if (format == 2) return as_float(bits);
  if (format == 0) return as_float(bits << 16);
  const uint32_t sign = (bits & 0x8000u) << 16, e = (bits >> 10) & 0x1fu, m = bits & 0x3ffu;
  if (e == 31) return as_float(sign | 0x7f800000u | (m << 13));
  if (e == 0) return as_float(sign | as_uint((float)m * 5.9604644775390625e-8f)); /* m 2^-24 */
  return as_float(sign | ((e + 112) << 23) | (m << 13));
}
)";

// One warp's MMA: every lane writes its A and B elements where the fragment tables place them,
// then computes its accumulator elements (the steps in increasing order).
constexpr const char* kEmulatedMma = R"(/* Emulated mma.sync (tests on OpenCL): format 0 bf16, 1 f16 (m16n8k16), 2 tf32 (m16n8k8). */
$P void cannl_mma_emulated(float* c, const uint32_t* a, const uint32_t* b, __local float* mx, int lane, int format) {
  const int k = format == 2 ? 8 : 16, na = format == 2 ? 4 : 8, nb = format == 2 ? 2 : 4;
  __constant uchar* at = format == 2 ? cannl_mma8_a : cannl_mma16_a;
  __constant uchar* bt = format == 2 ? cannl_mma8_b : cannl_mma16_b;
  for (int e = 0; e < na; ++e) {
    const uint32_t bits = format == 2 ? a[e] : (a[e / 2] >> (16 * (e % 2))) & 0xffffu;
    const int q = 2 * (lane * na + e);
    mx[at[q] * k + at[q + 1]] = cannl_mma_input(bits, format);
  }
  for (int e = 0; e < nb; ++e) {
    const uint32_t bits = format == 2 ? b[e] : (b[e / 2] >> (16 * (e % 2))) & 0xffffu;
    const int q = 2 * (lane * nb + e);
    mx[16 * k + bt[q] * 8 + bt[q + 1]] = cannl_mma_input(bits, format);
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int e = 0; e < 4; ++e) {
    const int row = cannl_mma_c[2 * (lane * 4 + e)], col = cannl_mma_c[2 * (lane * 4 + e) + 1];
    float s = c[e];
    for (int q = 0; q < k; ++q) s = s + mx[row * k + q] * mx[16 * k + q * 8 + col];
    c[e] = s;
  }
  barrier(CLK_LOCAL_MEM_FENCE);
}
)";

// ldmatrix: every lane publishes its row address, then reads the elements the table gives it.
constexpr const char* kEmulatedLdmatrix = R"(/* Emulated ldmatrix.sync.aligned.m8n8.x4{.trans}.shared.b16 (tests on OpenCL). */
$P void cannl_ldsm_emulated(uint32_t* r, __local const uint16_t* slice, int offset, __local int* xchg, int lane, int trans) {
  xchg[lane] = offset;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int reg = 0; reg < 4; ++reg) {
    uint32_t v = 0;
    for (int h = 0; h < 2; ++h) {
      const int q = 2 * (((trans * 32 + lane) * 4 + reg) * 2 + h);
      v |= (uint32_t)slice[xchg[8 * reg + cannl_ldsm_cells[q]] + cannl_ldsm_cells[q + 1]] << (16 * h);
    }
    r[reg] = v;
  }
  barrier(CLK_LOCAL_MEM_FENCE);
}
)";

}  // namespace

void append_cuda_mma_helpers(std::vector<PreludeHelper>& out) {
  out.push_back({"cannl_ldsm_x4", cuda_ldmatrix("cannl_ldsm_x4", ""), {}});
  out.push_back({"cannl_ldsm_x4_trans", cuda_ldmatrix("cannl_ldsm_x4_trans", ".trans"), {}});
  out.push_back({"cannl_mma_bf16", cuda_mma("cannl_mma_bf16", "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32"), {}});
  out.push_back({"cannl_mma_f16", cuda_mma("cannl_mma_f16", "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"), {}});
  out.push_back({"cannl_mma_tf32", cuda_mma("cannl_mma_tf32", "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32"), {}});
  out.push_back({"cannl_mma_f16_bits",
                 device_only("$P uint16_t cannl_mma_f16_bits(float x) {\n"
                             "  unsigned short h;\n  asm(\"cvt.rn.f16.f32 %0, %1;\" : \"=h\"(h) : \"f\"(x));\n  return h;\n}\n"),
                 {}});
}

void append_opencl_mma_emulation(std::vector<PreludeHelper>& out) {
  out.push_back({"cannl_mma16_a", cell_table("cannl_mma16_a", 32 * 8, [](int q) { return mma_a_cell(kM16N8K16, q / 8, q % 8); }), {}});
  out.push_back({"cannl_mma16_b", cell_table("cannl_mma16_b", 32 * 4, [](int q) { return mma_b_cell(kM16N8K16, q / 4, q % 4); }), {}});
  out.push_back({"cannl_mma8_a", cell_table("cannl_mma8_a", 32 * 4, [](int q) { return mma_a_cell(kM16N8K8, q / 4, q % 4); }), {}});
  out.push_back({"cannl_mma8_b", cell_table("cannl_mma8_b", 32 * 2, [](int q) { return mma_b_cell(kM16N8K8, q / 2, q % 2); }), {}});
  out.push_back({"cannl_mma_c", cell_table("cannl_mma_c", 32 * 4, [](int q) { return mma_c_cell(kM16N8K16, q / 4, q % 4); }), {}});
  out.push_back({"cannl_ldsm_cells", cell_table("cannl_ldsm_cells", 2 * 32 * 4 * 2, [](int q) {
                   return ldmatrix_cell(q / 256 == 1, (q / 8) % 32, (q / 2) % 4, q % 2);
                 }), {}});
  out.push_back({"cannl_mma_f16_bits", kEmulatedF16, {}});
  out.push_back({"cannl_mma_input", kEmulatedInput, {}});
  out.push_back({"cannl_mma_emulated", kEmulatedMma,
                 {"cannl_mma16_a", "cannl_mma16_b", "cannl_mma8_a", "cannl_mma8_b", "cannl_mma_c", "cannl_mma_input"}});
  out.push_back({"cannl_ldsm_emulated", kEmulatedLdmatrix, {"cannl_ldsm_cells"}});
  const std::string args = ", __local int* xchg, __local float* mx, int lane)";
  const auto mma = [&](const std::string& name, int format) {
    out.push_back({name,
                   "$P void " + name + "(float* c, const uint32_t* a, const uint32_t* b" + args +
                       " {\n  (void)xchg;\n  cannl_mma_emulated(c, a, b, mx, lane, " + std::to_string(format) + ");\n}\n",
                   {"cannl_mma_emulated"}});
  };
  mma("cannl_mma_bf16", 0);
  mma("cannl_mma_f16", 1);
  mma("cannl_mma_tf32", 2);
  for (const int trans : {0, 1}) {
    const std::string name = trans ? "cannl_ldsm_x4_trans" : "cannl_ldsm_x4";
    out.push_back({name,
                   "$P void " + name + "(uint32_t* r, __local const uint16_t* slice, int offset" + args +
                       " {\n  (void)mx;\n  cannl_ldsm_emulated(r, slice, offset, xchg, lane, " + std::to_string(trans) + ");\n}\n",
                   {"cannl_ldsm_emulated"}});
  }
}

}  // namespace cannl::codegen
