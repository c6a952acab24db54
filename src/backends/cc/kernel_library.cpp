// The cc backend's kernel libraries (see kernel_library.h).
#include "backends/cc/kernel_library.h"

#include <map>
#include <mutex>

#include "backends/cc/toolchain.h"
#include "cannl/codegen/c_kernels.h"
#include "cannl/support/files.h"
#include "cannl/support/hash.h"

namespace cannl::backends::cc {

std::shared_ptr<SharedLibrary> sgemm_kernel_library(int vector_bytes, const ir::GemmShape& shape) {
  const codegen::KernelLibrarySource source = codegen::sgemm_kernel_library(vector_bytes, shape);
  // Everything the cached file depends on besides its text: another build directory, compiler
  // or flag setting (tests switch them) is another library. The file's own digest covers the
  // rest; this key only saves rehashing and reloading it for every routine.
  const Toolchain& tc = find_toolchain();
  std::string key = files::build_dir().string() + "\n" + source.text + "\n" + tc.path;
  for (const auto& flag : compile_flags(tc)) key += " " + flag;
  static std::mutex mutex;
  static std::map<std::string, std::shared_ptr<SharedLibrary>> loaded;
  std::lock_guard lock(mutex);
  auto& library = loaded[key];
  if (library == nullptr) library = load_or_compile(source.name, source.text, {.soname = true}, /*shared=*/true);
  return library;
}

LinkOptions kernel_link_options(const std::string& routine_source, const ir::Target& target) {
  if (target.vector_bytes <= 0) return {};
  const std::string name = codegen::sgemm_kernel_library(target.vector_bytes, target.gemm).name;
  if (routine_source.find(name) == std::string::npos) return {};
  return {.libraries = {sgemm_kernel_library(target.vector_bytes, target.gemm)->path()}};
}

std::string kernel_link_key(const std::string& routine_source, const ir::Target& target) {
  if (target.vector_bytes <= 0) return "";
  const codegen::KernelLibrarySource source = codegen::sgemm_kernel_library(target.vector_bytes, target.gemm);
  if (routine_source.find(source.name) == std::string::npos) return "";
  return source.name + " " + sha256_hex(source.text);
}

LinkOptions kernel_link_options(const std::string& routine_source, int vector_bytes) {
  return kernel_link_options(routine_source, vector_bytes > 0 ? ir::cpu_target(vector_bytes) : ir::Target{});
}

}  // namespace cannl::backends::cc
