// Index precision from the configuration (index_precision.h).
#include "backends/index_precision.h"

#include <string>

#include "cannl/support/config.h"
#include "cannl/support/error.h"

namespace cannl::backends {

ir::DType configured_index_dtype(ir::DType preferred) {
  const std::string prec = config::get_one_of("index_prec", {"auto", "int32", "int64"});
  if (config::get_bool("large_models")) {
    if (prec == "int32")
      throw ConfigError("index_prec=int32 contradicts large_models=true (nodes of 2^31 elements need 64-bit "
                        "indices): set index_prec=auto or int64");
    return ir::DType::I64;
  }
  if (prec == "int32") return ir::DType::I32;
  if (prec == "int64") return ir::DType::I64;
  return preferred;
}

}  // namespace cannl::backends
