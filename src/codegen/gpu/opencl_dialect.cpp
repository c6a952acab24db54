// OpenCL C 1.2: `__kernel` functions with the required work-group size, `__global` restrict
// pointers, fixed-width integer typedefs, doubles (cl_khr_fp64), no contraction, and the C math
// names mapped to OpenCL's overloaded built-ins. Tensor-core tiles run on an emulation of the
// warp-level instructions (mma_helpers.h), for tests only: the backend's target never asks for
// them, so production OpenCL keeps the scalar tile; pipelined staging likewise runs on an
// emulation of cp.async (async_copy_helpers.h), for tests only.
#include "cannl/support/error.h"
#include "codegen/clike/body_printer.h"
#include "codegen/gpu/async_copy_helpers.h"
#include "codegen/gpu/gpu_dialect.h"
#include "codegen/gpu/mma_helpers.h"

namespace cannl::codegen {

class OpenClDialect final : public GpuDialect {
 public:
  std::string function_prefix() const override { return "__kernel"; }
  std::string helper_prefix() const override { return "static inline"; }
  std::string pointer_param(const std::string& type, const std::string& ident) const override {
    return "__global " + type + " *restrict " + ident;
  }
  std::string shared_pointer_param(const std::string& type, const std::string& ident) const override {
    return "__global " + type + " *" + ident;
  }
  std::string vector_load(const std::string&, int lanes, const std::string& element) const override {
    return "vload" + std::to_string(lanes) + "(0, &" + element + ")";
  }
  std::string vector_store(const std::string&, int lanes, const std::string& element,
                           const std::string& value) const override {
    return "vstore" + std::to_string(lanes) + "(" + value + ", 0, &" + element + ");";
  }
  std::string vector_constructor(const std::string& vtype) const override { return "(" + vtype + ")"; }
  std::string prelude_header() const override {
    // FP_CONTRACT OFF: OpenCL may otherwise fuse a*b+c into one rounding where the IR has two.
    std::string h =
        "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n#pragma OPENCL FP_CONTRACT OFF\n"
        "typedef char int8_t;\ntypedef uchar uint8_t;\ntypedef short int16_t;\ntypedef ushort uint16_t;\n"
        "typedef int int32_t;\ntypedef uint uint32_t;\ntypedef long int64_t;\ntypedef ulong uint64_t;\n";
    // The f32 spellings of libm (OpenCL's built-ins are overloaded on the argument type).
    for (const char* fn : {"exp", "log", "exp2", "log2", "sin", "cos", "sqrt", "trunc", "tanh", "pow", "fmod",
                           "fma", "ldexp", "fabs"}) {
      h += std::string("#define ") + fn + "f " + fn + "\n";
    }
    // OpenCL's NAN is some quiet NaN (PoCL's is 0x7fffffff); a constant NaN is C's and CUDA's,
    // the interpreter's: 0x7fc00000.
    h += "#undef NAN\n#define NAN as_float(0x7fc00000)\n";
    return h + integer_limit_macros();
  }
  std::set<std::string> reserved_words() const override {
    auto words = GpuDialect::reserved_words();
    for (const char* w : {"kernel", "global", "local", "constant", "private", "half", "uchar", "ushort", "uint",
                          "ulong", "signed", "unsigned", "min", "max", "read_only", "write_only", "image2d_t",
                          "sampler_t"}) {
      words.insert(w);
    }
    return words;
  }
  std::string kernel_head(const std::string& name, const ir::KernelGeometry& g) const override {
    return "__kernel __attribute__((reqd_work_group_size(" + std::to_string(g.block[0]) + ", " +
           std::to_string(g.block[1]) + ", " + std::to_string(g.block[2]) + "))) void " + name;
  }
  std::string block_index(int slot) const override { return "get_group_id(" + std::to_string(slot) + ")"; }
  std::string thread_index(int slot) const override { return "get_local_id(" + std::to_string(slot) + ")"; }
  std::string f32_bits_fn() const override { return "as_int"; }
  std::string bits_f32_fn() const override { return "as_float"; }
  std::string f64_bits_fn() const override { return "as_long"; }
  std::string bits_f64_fn() const override { return "as_double"; }
  std::string barrier() const override { return "barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);"; }
  bool brackets_uniform_regions_with_barriers() const override { return true; }
  std::string shared_array(const std::string& type, const std::string& ident, std::int64_t elements) const override {
    return "__local " + type + " " + ident + "[" + std::to_string(elements) + "];";
  }
  bool spells_warp_mma() const override { return true; }
  bool spells_async_copy() const override { return true; }
  void append_prelude_helpers(std::vector<PreludeHelper>& out, const ir::Target&) const override {
    append_opencl_mma_emulation(out);
    append_opencl_async_copy_emulation(out);
  }
  std::string async_copy_queue(BodyPrinter& p, std::int64_t copies) const override {
    internal_check(copies <= kOpenClAsyncQueue, [&] {
      return "codegen: " + std::to_string(copies) + " copies in flight per thread exceed the emulation's queue";
    });
    p.line("cannl_cp_queue cannl_cpq;");
    p.line("cannl_cpq.n = 0;");
    return "&cannl_cpq";
  }
  std::string aligned_shared_array(const std::string& type, const std::string& ident,
                                   std::int64_t elements) const override {
    return "__local " + type + " " + ident + "[" + std::to_string(elements) + "] __attribute__((aligned(16)));";
  }
  std::string declare_warp_scratch(BodyPrinter& p, std::int64_t warps) const override {
    p.declare_at_kernel_scope("__local int cannl_xchg[" + std::to_string(32 * warps) + "];");
    p.declare_at_kernel_scope("__local float cannl_mx[" + std::to_string(kOpenClMmaScratch * warps) + "];");
    return ", cannl_xchg + 32 * cannl_warp, cannl_mx + " + std::to_string(kOpenClMmaScratch) + " * cannl_warp, cannl_lane";
  }
};

const CLikePrinter& opencl_dialect() {
  static const OpenClDialect dialect;
  return dialect;
}

}  // namespace cannl::codegen
