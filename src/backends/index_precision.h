#pragma once
// The index type a backend's target record carries (ir::Target::index_dtype), from the config
// keys `index_prec` and `large_models`.
//
//   t.index_dtype = configured_index_dtype(ir::DType::I32);

#include "cannl/ir/dtype.h"

namespace cannl::backends {

/// I64 under large_models=true; else index_prec's choice, `preferred` for auto. ConfigError for
/// an unknown index_prec, or index_prec=int32 together with large_models=true.
ir::DType configured_index_dtype(ir::DType preferred);

}  // namespace cannl::backends
