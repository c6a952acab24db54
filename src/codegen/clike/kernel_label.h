#pragma once
// Readable names of kernels (a loop nest, a matmul tile, a memset), for kernel profiles: the C
// dialect's timed statements and the GPU dialects' kernel functions.

#include <string>

#include "cannl/ir/loop_ir.h"
#include "codegen/clike/identifiers.h"

namespace cannl::codegen {

/// A readable name for a kernel: "<section>: <what> -> <written nodes> (<first assignment>)",
/// with `section` the block comment it sits under; without `first_assignment`, no "(<first
/// assignment>)" (its comment names the nodes of one caller).
///   kernel_label(zero_out(w), "forward", names) == "forward: memset -> w"
std::string kernel_label(const ir::StmtRef& stmt, const std::string& section, const IdentifierTable& names,
                         bool first_assignment = true);

}  // namespace cannl::codegen
