#pragma once
// Kernel timing in generated C (CpuCodegenOptions::profile_kernels, config key profile_kernels).
//
// A "kernel" is one top-level statement of the routine body (nested block Seqs flattened): a
// loop nest, a matmul tile, a memset. The timed body reads the monotonic clock once before the
// first kernel and once after each one (`cannl_profile_lap`), adding the lap to the kernel's
// `calls` / `total_ns` counters, static arrays of the generated source. The exported
// `cannl_profile_<name>()` returns them with a label and the source line of every kernel
// (layout: codegen::KernelProfileTable). Comments and scalar declarations are not kernels.
//
//   std::vector<TimedKernel> kernels;
//   std::string body_text = print_timed_body(printer, routine.body, names, kernels);

#include <cstdint>
#include <string>
#include <vector>

#include "cannl/ir/loop_ir.h"
#include "codegen/clike/body_printer.h"
#include "codegen/clike/identifiers.h"

namespace cannl::codegen {

/// One timed statement: its label and the 0-based line of its first text line in the body text.
struct TimedKernel {
  std::string label;
  std::int64_t body_line = 0;
};

/// A readable name for a kernel: "<section>: <what> -> <written nodes> (<first assignment>)",
/// with `section` the block comment it sits under.
///   kernel_label(zero_out(w), "forward", names) == "forward: memset -> w"
std::string kernel_label(const ir::StmtRef& stmt, const std::string& section, const IdentifierTable& names);

/// The routine body printed by `printer` at indent 1 with the timing calls around each kernel;
/// appends the kernels to `kernels` in order.
std::string print_timed_body(BodyPrinter& printer, const ir::StmtRef& body,
                             const IdentifierTable& names, std::vector<TimedKernel>& kernels);

/// A generated file cut where the profiled file adds text: `opening` is the routine's head up to
/// its body, `rest` the body (as printed by print_timed_body) and everything after it.
struct FileParts {
  std::string header, includes, prelude, opening, rest;
};

/// The profiled file: the feature macro clock_gettime needs (before the includes), the counters
/// and clock helpers (before the routine) and, after everything, the labels, the 1-based source
/// lines of `kernels` and the exported `symbol` returning the table.
std::string profiled_file(const FileParts& parts, const std::vector<TimedKernel>& kernels,
                          const std::string& symbol);

}  // namespace cannl::codegen
