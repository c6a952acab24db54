// WorkgroupReduce loops of the GPU dialects (gpu_dialect.h, ir/block_reduction.h).
//
//   __shared__ float cannl_red_i4[256];   (at the kernel's top)
//   {
//     const int64_t lin = threadIdx.x + 256 * (threadIdx.y + ...);   // this thread's slot
//     const int64_t r = threadIdx.x;
//     if (r < 100) cannl_red_i4[lin] = v(r);
//     __syncthreads();
//     for (int64_t s = 64; s > 0; s >>= 1) {        // the first power of two >= 100, halved
//       if (r < s && r + s < 100) cannl_red_i4[lin] = cannl_red_i4[lin] + cannl_red_i4[lin + s];
//       __syncthreads();
//     }
//     if (r == 0) d[idx] = d[idx] + cannl_red_i4[lin];
//     __syncthreads();
//   }
//
// Only the loop's own iterations enter the tree (no neutral value needed), in a fixed order: the
// result depends on the loop's extent alone, never on the block size or the device.
#include "cannl/ir/block_reduction.h"
#include "cannl/support/error.h"
#include "codegen/clike/body_printer.h"
#include "codegen/gpu/gpu_dialect.h"

namespace cannl::codegen {

namespace {

// `a accum b` for values of compute dtype `t` (maximumNumber / minimumNumber on floats, as the
// op table spells max and min).
std::string combine(ir::Op accum, ir::DType t, const std::string& a, const std::string& b) {
  const bool is_float = ir::is_float(t);
  const std::string f = t == ir::DType::F64 ? "" : "f";
  switch (accum) {
    case ir::Op::Add: return "(" + a + " + " + b + ")";
    case ir::Op::Mul: return "(" + a + " * " + b + ")";
    case ir::Op::Max: return is_float ? "cannl_fmax" + f + "(" + a + ", " + b + ")" : "(" + a + " > " + b + " ? " + a + " : " + b + ")";
    case ir::Op::Min: return is_float ? "cannl_fmin" + f + "(" + a + ", " + b + ")" : "(" + a + " < " + b + " ? " + a + " : " + b + ")";
    default: throw InternalError("codegen: a block reduction by " + std::string(ir::op_name(accum)));
  }
}

// The block-linear index of this thread: threadIdx.x + bx * (threadIdx.y + by * threadIdx.z).
std::string linear_thread(const GpuDialect& d, const ir::KernelGeometry& g) {
  std::string lin = "(int64_t)" + d.thread_index(0);
  std::int64_t stride = g.block[0];
  for (int slot = 1; slot < 3; ++slot) {
    if (g.block[static_cast<std::size_t>(slot)] > 1) {
      lin += " + " + std::to_string(stride) + " * (int64_t)" + d.thread_index(slot);
    }
    stride *= g.block[static_cast<std::size_t>(slot)];
  }
  return lin;
}

}  // namespace

void GpuDialect::print_workgroup_reduce(BodyPrinter& p, const ir::For& f, const std::string& name) const {
  const ir::KernelGeometry* g = p.geometry();
  internal_check(g != nullptr && g->slot_of.contains(f.index.id) && f.begin == 0,
                 "codegen: a WorkgroupReduce loop without a slot in the kernel's geometry");
  const int slot = g->slot_of.at(f.index.id);
  const std::string me = "(int64_t)" + thread_index(slot);
  const auto reduction = ir::block_reduction(f);
  if (!reduction || p.divergent()) {
    // Serial, in the loop's order, on the slot's first thread: correct wherever it stands.
    p.line("if (" + me + " == 0) {");
    p.indent();
    p.enter_divergent();
    p.print_serial_loop(f, name, "0", std::to_string(f.end));
    p.leave_divergent();
    p.dedent();
    p.line("}");
    return;
  }
  std::int64_t stride = 1;
  for (int s = 0; s < slot; ++s) stride *= g->block[static_cast<std::size_t>(s)];
  std::int64_t half = 1;
  while (half * 2 < f.end) half *= 2;
  const std::string type = value_type(reduction->dtype);
  const std::string arr = "cannl_red_" + p.fresh_loop_name();
  const std::string lin = p.fresh_loop_name(), s = p.fresh_loop_name();
  const std::string mine = arr + "[" + lin + "]";
  const std::string other = arr + "[" + lin + " + " + s + (stride == 1 ? "" : " * " + std::to_string(stride)) + "]";
  const std::string end = std::to_string(f.end);
  p.declare_at_kernel_scope(shared_array(type, arr, g->threads_per_block()));
  p.line("{");
  p.indent();
  p.line("const int64_t " + lin + " = " + linear_thread(*this, *g) + ";");
  p.line("const int64_t " + name + " = " + me + ";");
  p.line("if (" + name + " < " + end + ") {");
  p.indent();
  p.enter_divergent();
  p.line(mine + " = " + p.convert(p.scalar(reduction->value), reduction->dtype) + ";");
  p.leave_divergent();
  p.dedent();
  p.line("}");
  p.line(barrier());
  p.line("for (int64_t " + s + " = " + std::to_string(f.end > 1 ? half : 0) + "; " + s + " > 0; " + s + " >>= 1) {");
  p.indent();
  p.line("if (" + name + " < " + s + " && " + name + " + " + s + " < " + end + ") " + mine + " = " +
         combine(reduction->accum, reduction->dtype, mine, other) + ";");
  p.line(barrier());
  p.dedent();
  p.line("}");
  const ir::TensorNode& d = *reduction->target;
  const std::string cell = p.names().node(d) + "[" + p.offset(d, reduction->index) + "]";
  const std::string current = p.convert({p.load(cell, d.dtype), d.dtype}, reduction->dtype);
  const Expr total{combine(reduction->accum, reduction->dtype, current, mine), reduction->dtype};
  p.line("if (" + name + " == 0) " + cell + " = " + p.store(total, d.dtype) + ";");
  p.line(barrier());
  p.dedent();
  p.line("}");
}

}  // namespace cannl::codegen
