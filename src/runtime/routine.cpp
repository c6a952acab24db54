// Routine handle accessors and routine naming.
#include <cctype>

#include "cannl/support/error.h"
#include "runtime/routine_data.h"

namespace cannl::runtime {

namespace {
const RoutineData& data_of(const RoutineData* impl) {
  if (!impl) throw RuntimeUsageError("this Routine is empty: obtain routines from Context::compile");
  return *impl;
}
}  // namespace

const std::string& Routine::name() const { return data_of(impl_.get()).name; }
const std::vector<ir::StaticSymbol>& Routine::statics() const { return data_of(impl_.get()).statics; }
const std::vector<ir::NodeRef>& Routine::inputs() const { return data_of(impl_.get()).inputs; }
const std::vector<ir::NodeRef>& Routine::outputs() const { return data_of(impl_.get()).outputs; }
const ir::LoweredRoutine& Routine::lowered() const { return data_of(impl_.get()).lowered; }
const std::string& Routine::source() const { return data_of(impl_.get()).source; }
int Routine::id() const { return data_of(impl_.get()).id; }

std::string sanitize_routine_name(const std::string& name) {
  std::string result;
  for (char c : name) {
    const auto u = static_cast<unsigned char>(c);
    result += (std::isalnum(u) != 0 || c == '_') && u < 128 ? c : '_';
  }
  if (result.empty()) return "routine";
  if (std::isdigit(static_cast<unsigned char>(result[0])) != 0) return "_" + result;
  return result;
}

}  // namespace cannl::runtime
