#pragma once
// Pieces of a generated file's layout shared by the routine printer (clike_printer.cpp) and the
// module printer (module_printer.cpp).

#include <string>
#include <vector>

#include "cannl/codegen/clike_printer.h"
#include "codegen/clike/identifiers.h"

namespace cannl::codegen {

/// One line of a header comment describing a node: " *   w1: node n3 "w1", f32, dims [4, 2]\n".
std::string describe_node(const ir::TensorNode& n, const IdentifierTable& names);
/// Parameter declarations joined on one line, or one per line when `head` + them is long.
std::string join_params(const std::vector<std::string>& params, const std::string& head);
/// The routine's name as a C identifier that no dialect word or prelude helper takes.
std::string routine_identifier(const CLikePrinter& d, const std::string& routine_name);

}  // namespace cannl::codegen
