#pragma once
// The argument checks every Executable::run makes before touching memory: as many buffers as
// the routine has parameters, each present and large enough, and every static value in range.
//
//   check_run_arguments(request, buffers, statics);  // RuntimeUsageError naming what is wrong

#include <cstdint>
#include <span>

#include "cannl/backends/backend.h"

namespace cannl::backends {

/// Throws RuntimeUsageError naming the routine and the offending node or static.
void check_run_arguments(const CompileRequest& request, std::span<Buffer* const> buffers,
                         std::span<const std::int64_t> static_values);

}  // namespace cannl::backends
