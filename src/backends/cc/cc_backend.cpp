// The cc backend: generated C, compiled by the system C compiler, cached, dlopen'ed.
#include "backends/cc/compile_cache.h"
#include "backends/cc/toolchain.h"
#include "backends/host_memory.h"
#include "cannl/backends/backend.h"
#include "cannl/codegen/c_codegen.h"

namespace cannl::backends {

namespace {

using EntryFn = void (*)(void**, const std::int64_t*);

class CcExecutable final : public Executable {
 public:
  CcExecutable(CompileRequest request, codegen::GeneratedSource source,
               std::shared_ptr<cc::SharedLibrary> library)
      : request_(std::move(request)), source_(std::move(source)), library_(std::move(library)) {
    entry_ = reinterpret_cast<EntryFn>(library_->symbol(source_.entry_symbol));
  }

  void run(std::span<Buffer* const> buffers, std::span<const std::int64_t> static_values) override {
    const std::vector<std::byte*> pointers = host_pointers(request_, buffers, static_values);
    std::vector<void*> args(pointers.begin(), pointers.end());
    entry_(args.data(), static_values.data());
  }

  const std::string& source() const override { return source_.text; }

 private:
  CompileRequest request_;
  codegen::GeneratedSource source_;
  std::shared_ptr<cc::SharedLibrary> library_;
  EntryFn entry_ = nullptr;
};

class CcBackend final : public Backend {
 public:
  std::string_view name() const override { return "cc"; }
  std::unique_ptr<Buffer> allocate(std::size_t bytes) override {
    return std::make_unique<CpuBuffer>(bytes);
  }
  std::unique_ptr<Executable> compile(const CompileRequest& request) override {
    const cc::ParallelSettings parallel = cc::parallel_settings(cc::find_toolchain());
    codegen::CpuCodegenOptions options;
    options.openmp_grid = parallel.openmp_grid;
    options.grid_chunks = parallel.chunks;
    options.threads = parallel.threads;
    options.vector_bytes = parallel.vector_bytes;
    codegen::GeneratedSource source = codegen::emit_c(request.routine, request.params, options);
    // The entry symbol is "cannl_entry_<sanitized routine name>"; files use the routine name.
    const std::string& entry = source.entry_symbol;
    const std::string file_stem = entry.substr(std::string("cannl_entry_").size());
    auto library = cc::load_or_compile(file_stem, source.text);
    return std::make_unique<CcExecutable>(request, std::move(source), std::move(library));
  }
};

}  // namespace

std::shared_ptr<Backend> make_cc_backend() {
  cc::find_toolchain();  // BackendUnavailable now rather than at the first compile
  return std::make_shared<CcBackend>();
}

}  // namespace cannl::backends
