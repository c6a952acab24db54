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
//
// In the strided form (serial loops between the WorkgroupReduce loop and the accumulation) the
// value a thread puts in its slot is its own fold of its steps over those loops, in their order
// (print_strided_partial below); the remainder guard is then checked at each step.
//
// Under a remainder guard `if (before + r < bound)` the extent is the guard's, worked out once
// per slice in place of the constant 100 above, and the total is added only when a step ran:
//
//     const int64_t e = (256 < 50257 - (256 * i3) ? 256 : 50257 - (256 * i3));
//     ...the tree above with e for 100...
//     if (r == 0 && 0 < e) d[idx] = d[idx] + cannl_red_i4[lin];
//
// A dialect with wave shuffles (HIP; CUDA, whose __shfl_down_sync names the lanes that take
// part) takes the steps whose pairs lie in one wave (s < wave) in registers instead, when the
// loop's threads start at a wave's first lane (slot 0, and each group of them a whole number of
// waves or the only group):
//
//     for (int64_t s = 64; s >= 64; s >>= 1) { ...the steps above... }   // wave 64
//     if (r < 64) {                                  // the group's first wave, all lanes together
//       float v = r < 100 ? cannl_red_i4[lin] : 0.0f;
//       for (int64_t s = 32; s > 0; s >>= 1) {
//         const float o = __shfl_down(v, (unsigned int)s);
//         if (r < s && r + s < 100) v = v + o;
//       }
//       if (r == 0) d[idx] = d[idx] + v;
//     }
//     __syncthreads();
//
// Lane r combines the same two values as the shared-memory step, so the bits do not depend on
// the wave size either: wave32 and wave64 modules differ in text only.
#include <algorithm>
#include <functional>

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

// The wave size whose in-wave steps the reduction takes as shuffles, or 0 for none: the dialect
// spells shuffles, the target's wave has at least two lanes, the value is a 32- or 64-bit one
// (what shuffles move), and each group of the loop's threads starts at a wave's first lane.
int shuffle_wave(const GpuDialect& d, const BodyPrinter& p, const ir::KernelGeometry& g, int slot, std::int64_t end,
                 ir::DType t) {
  const int wave = p.options().target.gpu.warp_size;
  if (d.shuffle_down("v", "s", wave).empty() || wave < 2 || end < 2 || slot != 0) return 0;
  const bool word = t == ir::DType::F32 || t == ir::DType::F64 || t == ir::DType::I32 || t == ir::DType::I64 ||
                    t == ir::DType::U32 || t == ir::DType::U64;
  const bool aligned = g.block[0] % wave == 0 || g.block[1] * g.block[2] == 1;
  return word && aligned ? wave : 0;
}

// The strided form: this thread's steps folded in the serial loops' order into a register, the
// first step taken as it is (no neutral value: the bits of -0 and NaN stay the serial fold's),
// then stored in its slot. Every thread has a first step (ir::block_reduction checks it).
//
//     float p = 0.0f; int has = 0;
//     for (int64_t q = 0; q < 197; ++q) {
//       if (256 * q + r < 50257) { const float v = x[..]; p = has ? fold(p, v) : v; has = 1; }
//     }
//     cannl_red_i4[lin] = p;
void print_strided_partial(BodyPrinter& p, const ir::BlockReduction& reduction, const std::string& name,
                           const std::string& type, const std::string& slot,
                           const std::function<std::string(const std::string&, const std::string&)>& fold) {
  const std::string acc = p.fresh_loop_name(), has = p.fresh_loop_name(), v = p.fresh_loop_name();
  p.line(type + " " + acc + " = " + p.zero(reduction.dtype) + ";");
  p.line("int " + has + " = 0;");
  for (const ir::For* f : reduction.strided) {
    const std::string q = p.fresh_loop_name();
    p.bind(f->index, q);
    p.line("for (" + p.index_type() + " " + q + " = " + std::to_string(f->begin) + "; " + q + " < " +
           std::to_string(f->end) + "; ++" + q + ") {");
    p.indent();
  }
  if (reduction.guard) {
    const std::string before = p.scalar(ir::embed_index(reduction.guard->before)).text;
    p.line("if ((" + before + ") + " + name + " < " + std::to_string(reduction.guard->bound) + ") {");
    p.indent();
  }
  p.line("const " + type + " " + v + " = " + p.convert(p.scalar(reduction.value), reduction.dtype) + ";");
  p.line(acc + " = " + has + " ? " + fold(acc, v) + " : " + v + ";");
  p.line(has + " = 1;");
  for (std::size_t k = 0; k < reduction.strided.size() + (reduction.guard ? 1 : 0); ++k) {
    p.dedent();
    p.line("}");
  }
  p.line(slot + " = " + acc + ";");
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
  // Signed integer sums and products wrap, as the interpreter's do, through their unsigned type
  // (signed overflow is undefined in C).
  const bool wraps = (reduction->dtype == ir::DType::I32 || reduction->dtype == ir::DType::I64) &&
                     (reduction->accum == ir::Op::Add || reduction->accum == ir::Op::Mul);
  const ir::DType wrap_dtype = reduction->dtype == ir::DType::I32 ? ir::DType::U32 : ir::DType::U64;
  const auto fold = [&](const std::string& a, const std::string& b) {
    if (!wraps) return combine(reduction->accum, reduction->dtype, a, b);
    const std::string u = "(" + value_type(wrap_dtype) + ")";
    return "(" + type + ")" + combine(reduction->accum, wrap_dtype, u + a, u + b);
  };
  const std::string arr = "cannl_red_" + p.fresh_loop_name();
  const std::string lin = p.fresh_loop_name(), s = p.fresh_loop_name();
  const std::string mine = arr + "[" + lin + "]";
  const std::string other = arr + "[" + lin + " + " + s + (stride == 1 ? "" : " * " + std::to_string(stride)) + "]";
  const int wave = shuffle_wave(*this, p, *g, slot, f.end, reduction->dtype);
  p.declare_at_kernel_scope(shared_array(type, arr, g->threads_per_block()));
  p.line("{");
  p.indent();
  std::string end = std::to_string(f.end), any_step;
  if (const auto& guard = reduction->guard; guard && reduction->strided.empty()) {
    // A constant slice start leaves a constant count of steps: printed as one (compilers warn of
    // `0 < e` on a constant), unless it is none.
    const std::int64_t fixed = guard->before.is_fixed() ? std::min(f.end, guard->bound - guard->before.offset) : 0;
    if (fixed > 0) {
      end = std::to_string(fixed);
    } else {
      const std::string before = p.scalar(ir::embed_index(guard->before)).text;
      const std::string left = std::to_string(guard->bound) + " - (" + before + ")";
      const std::string e = p.fresh_loop_name();
      p.line("const int64_t " + e + " = (" + end + " < " + left + " ? " + end + " : " + left + ");");
      end = e;
      any_step = " && 0 < " + e;
    }
  }
  p.line("const int64_t " + lin + " = " + linear_thread(*this, *g) + ";");
  p.line("const int64_t " + name + " = " + me + ";");
  p.line("if (" + name + " < " + end + ") {");
  p.indent();
  p.enter_divergent();
  if (reduction->strided.empty()) {
    p.line(mine + " = " + p.convert(p.scalar(reduction->value), reduction->dtype) + ";");
  } else {
    print_strided_partial(p, *reduction, name, type, mine, fold);
  }
  p.leave_divergent();
  p.dedent();
  p.line("}");
  p.line(barrier());
  // The steps in shared memory: all of them, or those whose pairs span waves.
  const std::int64_t first = f.end > 1 ? half : 0;
  if (wave == 0 || first >= wave) {
    p.line("for (int64_t " + s + " = " + std::to_string(first) + "; " + s + (wave == 0 ? " > 0" : " >= " + std::to_string(wave)) +
           "; " + s + " >>= 1) {");
    p.indent();
    p.line("if (" + name + " < " + s + " && " + name + " + " + s + " < " + end + ") " + mine + " = " +
           fold(mine, other) + ";");
    p.line(barrier());
    p.dedent();
    p.line("}");
  }
  const ir::TensorNode& d = *reduction->target;
  const std::string cell = p.names().node(d) + "[" + p.offset(d, reduction->index) + "]";
  const std::string current = p.convert({p.load(cell, d.dtype), d.dtype}, reduction->dtype);
  if (wave == 0) {
    const Expr total{fold(current, mine), reduction->dtype};
    p.line("if (" + name + " == 0" + any_step + ") " + cell + " = " + p.store(total, d.dtype) + ";");
  } else {
    // The rest in registers, on the group's first wave (every lane of it takes this branch: a
    // whole wave, or the whole block where it is narrower).
    const std::string v = p.fresh_loop_name(), o = p.fresh_loop_name();
    const int lanes = static_cast<int>(std::min<std::int64_t>(wave, g->block[0]));
    p.line("if (" + name + " < " + std::to_string(wave) + ") {");
    p.indent();
    // Lanes past the steps take a zero they never combine: their shared slots were not written.
    p.line(type + " " + v + " = " + name + " < " + end + " ? " + mine + " : " + p.zero(reduction->dtype) + ";");
    p.line("for (int64_t " + s + " = " + std::to_string(std::min<std::int64_t>(first, wave / 2)) + "; " + s + " > 0; " + s +
           " >>= 1) {");
    p.indent();
    p.line("const " + type + " " + o + " = " + shuffle_down(v, s, lanes) + ";");
    p.line("if (" + name + " < " + s + " && " + name + " + " + s + " < " + end + ") " + v + " = " +
           fold(v, o) + ";");
    p.dedent();
    p.line("}");
    const Expr total{fold(current, v), reduction->dtype};
    p.line("if (" + name + " == 0" + any_step + ") " + cell + " = " + p.store(total, d.dtype) + ";");
    p.dedent();
    p.line("}");
  }
  p.line(barrier());
  p.dedent();
  p.line("}");
}

}  // namespace cannl::codegen
