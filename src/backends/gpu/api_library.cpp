// GPU API libraries loaded at run time (see api_library.h).
#include "backends/gpu/api_library.h"

#include <link.h>

#include <cstdlib>
#include <filesystem>

#include "cannl/support/error.h"

namespace cannl::backends::gpu {

ApiLibrary::ApiLibrary(const std::vector<std::string>& candidates, std::string what)
    : library_(cc::SharedLibrary::open_system(candidates, what)), what_(std::move(what)) {}

void* ApiLibrary::require(const char* name) const {
  void* address = library_->find_symbol(name);
  if (address == nullptr)
    throw BackendUnavailable(what_ + " is not usable: " + library_->path() + " has no function " + name +
                             " (an older version than cannl needs?)");
  return address;
}

std::string loaded_library_containing(const std::string& part) {
  struct Search {
    const std::string* part;
    std::string found;
  } search{&part, ""};
  dl_iterate_phdr(
      [](dl_phdr_info* info, std::size_t, void* data) {
        auto* s = static_cast<Search*>(data);
        const std::string path = info->dlpi_name != nullptr ? info->dlpi_name : "";
        if (std::filesystem::path(path).filename().string().find(*s->part) == std::string::npos) return 0;
        s->found = path;
        return 1;
      },
      &search);
  return search.found;
}

std::vector<std::string> cuda_toolkit_candidates(const std::vector<std::string>& sonames) {
  std::vector<std::filesystem::path> roots;
  for (const char* variable : {"CUDA_PATH", "CUDA_HOME"})
    if (const char* value = std::getenv(variable); value != nullptr && *value != '\0') roots.emplace_back(value);
  roots.emplace_back("/usr/local/cuda");
  std::vector<std::string> out;
  auto add = [&](const std::string& candidate) {
    for (const auto& existing : out)
      if (existing == candidate) return;
    out.push_back(candidate);
  };
  for (const auto& soname : sonames) add(soname);
  for (const auto& root : roots)
    for (const char* lib : {"lib64", "lib"})
      for (const auto& soname : sonames) add((root / lib / soname).string());
  return out;
}

}  // namespace cannl::backends::gpu
