#pragma once
// Kernel timing in generated C (CodegenOptions::profile_kernels, config key profile_kernels).
//
// A "kernel" is one top-level statement of the routine body (nested block Seqs flattened): a
// loop nest, a matmul tile, a memset. The timed body reads the monotonic clock once before the
// first kernel and once after each one (`cannl_profile_lap`), adding the lap to the kernel's
// `calls` / `total_ns` counters, static arrays of the generated source. The exported
// `cannl_profile_<name>()` returns them with a label and the source line of every kernel
// (layout: codegen::KernelProfileTable). Comments and scalar declarations are not kernels.
//
//   std::vector<TimedKernel> kernels;
//   std::string body_text = CDialect().timed_body(printer, routine.body, names, kernels);

#include <cstdint>
#include <string>
#include <vector>

#include "cannl/ir/loop_ir.h"
#include "codegen/clike/identifiers.h"

namespace cannl::codegen {

/// A readable name for a kernel: "<section>: <what> -> <written nodes> (<first assignment>)",
/// with `section` the block comment it sits under.
///   kernel_label(zero_out(w), "forward", names) == "forward: memset -> w"
std::string kernel_label(const ir::StmtRef& stmt, const std::string& section, const IdentifierTable& names);

}  // namespace cannl::codegen
