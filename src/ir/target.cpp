// The target record (target.h): the CPU defaults every CPU backend starts from.
#include "cannl/ir/target.h"

#include <algorithm>

#include "cannl/support/error.h"

namespace cannl::ir {

bool Target::renders_vector_op(Op op) const {
  return std::find(vector_ops.begin(), vector_ops.end(), op) != vector_ops.end();
}

Target cpu_target(int vector_bytes) {
  internal_check(vector_bytes == 0 || vector_bytes == 16 || vector_bytes == 32 || vector_bytes == 64, [&] {
    return "target: vector width must be 0, 16, 32 or 64 bytes, got " + std::to_string(vector_bytes);
  });
  Target t;
  t.backend = "cpu";
  t.vector_bytes = vector_bytes;
  // 32-bit counters cost the CPU a sign extension per address (no speed gained in exchange).
  t.index_dtype = DType::I64;
  if (vector_bytes == 0) return t;
  // Accumulators + B vectors + one broadcast must fit the register file.
  t.gemm = vector_bytes == 64 ? GemmShape{12, 2, 384, 512, 3072} : GemmShape{6, 2, 256, 512, 3072};
  // Each of these rounds lane by lane exactly like its scalar C form (max / min and the relus as
  // bit masks, fma as one rounding, exp and tanh as cannl's own functions, ir/own_math.h; where
  // on an f32 condition as a lane mask; comparisons as a lane mask of 1.0f; the mixed-precision
  // roundings on the bits, or the scalar helper per lane for f16).
  t.vector_ops = {Op::Identity, Op::Arg1,     Op::Arg2,      Op::Neg,      Op::Add,     Op::Sub,
                  Op::Mul,      Op::Div,      Op::Mul3,      Op::Fma,      Op::Relu,    Op::ReluGate,
                  Op::Max,      Op::Min,      Op::Exp,       Op::Tanh,     Op::Where,   Op::Cmplt,
                  Op::Cmpeq,    Op::Cmpne,    Op::RoundBf16, Op::RoundTf32, Op::RoundF16};
  return t;
}

Target generic_gpu_target(const GpuLimits& limits) {
  internal_check(limits.max_threads_per_block > 0, "target: a GPU target needs max_threads_per_block > 0");
  Target t;
  t.backend = "gpu";
  t.workgroups = true;
  t.gpu = limits;
  t.gpu_tile = default_gpu_blocking(limits);
  t.gpu_mma_tile = default_mma_blocking(limits);
  t.gpu_vector_bytes = 16;  // float4: CUDA's, HIP's and OpenCL's widest plain load
  return t;
}

GpuLimits sm90_gpu_limits(std::int64_t multiprocessors) {
  GpuLimits limits;
  limits.max_threads_per_block = 1024;
  limits.max_block_dims = {1024, 1024, 64};
  limits.max_grid_dims = {2147483647, 65535, 65535};
  limits.max_shared_bytes = 48 * 1024;  // without the opt-in to more per block
  limits.warp_size = 32;
  limits.compute_units = multiprocessors;
  return limits;
}

}  // namespace cannl::ir
