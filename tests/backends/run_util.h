#pragma once
// Running a CompileRequest on a backend with given input bytes, for the backend tests.
//
//   auto out = run_on(*backend, request, {a_bytes, b_bytes, {}});  // out[k]: bytes of params[k]

#include <cstring>
#include <memory>
#include <span>
#include <vector>

#include "cannl/backends/backend.h"
#include "cannl/support/config.h"

namespace cannl::test_util {

using Bytes = std::vector<std::byte>;

/// The C backend, created once per test process (its compile cache is per process too).
inline std::shared_ptr<backends::Backend> cc() {
  static auto backend = backends::make_cc_backend();
  return backend;
}

/// Allocates one buffer per param (inputs[k] uploaded when non-empty), runs, returns every buffer.
inline std::vector<Bytes> run_on(backends::Backend& backend, const backends::CompileRequest& request,
                                 const std::vector<Bytes>& inputs,
                                 std::vector<std::int64_t> statics = {}) {
  std::vector<std::unique_ptr<backends::Buffer>> owned;
  std::vector<backends::Buffer*> buffers;
  for (std::size_t k = 0; k < request.params.size(); ++k) {
    owned.push_back(backend.allocate(request.params[k]->size_in_bytes()));
    if (k < inputs.size() && !inputs[k].empty()) owned.back()->write(inputs[k]);
    buffers.push_back(owned.back().get());
  }
  backend.compile(request)->run(buffers, statics);
  std::vector<Bytes> out;
  for (auto& b : owned) {
    out.emplace_back(b->size());
    b->read(out.back());
  }
  return out;
}

template <class T>
Bytes bytes_of(const std::vector<T>& values) {
  Bytes out(values.size() * sizeof(T));
  if (!values.empty()) std::memcpy(out.data(), values.data(), out.size());
  return out;
}

template <class T>
std::vector<T> values_of(const Bytes& bytes) {
  std::vector<T> out(bytes.size() / sizeof(T));
  if (!out.empty()) std::memcpy(out.data(), bytes.data(), out.size() * sizeof(T));
  return out;
}

/// Clears configuration overrides when a test ends, whatever happens in it.
struct ConfigGuard {
  ConfigGuard() = default;
  ~ConfigGuard() { config::clear_overrides(); }
  ConfigGuard(const ConfigGuard&) = delete;
  ConfigGuard& operator=(const ConfigGuard&) = delete;
};

}  // namespace cannl::test_util
