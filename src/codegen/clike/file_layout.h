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

/// The header comment of a routine's file: its parameters, local arrays and statics.
std::string header_comment(const ir::LoweredRoutine& r, const std::vector<ir::NodeRef>& params,
                           const std::vector<ir::NodeRef>& locals, const IdentifierTable& names);
/// Nodes the body touches that are not parameters: arrays local to the routine function.
std::vector<ir::NodeRef> local_nodes(const ir::StmtRef& body, const std::vector<ir::NodeRef>& params);

/// Declarations of the local arrays (zeroed unless a ZeroOut comes first), and the matching
/// frees for heap-allocated ones. A failed allocation makes the routine return
/// CANNL_STATUS_OUT_OF_MEMORY before its body runs (every heap pointer is allocated before any is
/// checked, so the frees after `cannl_done` see each one allocated or NULL).
struct LocalArrays {
  std::string decls, frees;
};
LocalArrays local_arrays(const CLikePrinter& d, const std::vector<ir::NodeRef>& locals, const IdentifierTable& names,
                         const ir::StmtRef& body);
/// The routine function's name and parameter list.
RoutineSignature signature(const CLikePrinter& d, const ir::LoweredRoutine& routine,
                           const std::vector<ir::NodeRef>& params, const IdentifierTable& names);

}  // namespace cannl::codegen
