// The cc backend: generated C, compiled by the system C compiler, cached, dlopen'ed.
#include "backends/cc/compile_cache.h"
#include "backends/cc/kernel_library.h"
#include "backends/cc/toolchain.h"
#include "backends/host_memory.h"
#include "backends/index_precision.h"
#include "cannl/backends/backend.h"
#include "cannl/codegen/c_codegen.h"
#include "cannl/support/config.h"
#include "cannl/schedule/default_cpu.h"
#include "cannl/schedule/lower_for_target.h"
#include "cannl/support/error.h"
#include "cannl/support/log.h"

namespace cannl::backends {

namespace {

constexpr std::string_view kEntryPrefix = "cannl_entry_";
using EntryFn = int (*)(void**, const std::int64_t*);
using ProfileFn = const codegen::KernelProfileTable* (*)();

// Kernel timing costs a clock read per kernel per call: on when asked for, or at debug >= 2
// (which already pays for IR dumps), never at the default debug level.
bool profile_kernels() {
  return config::get_bool("profile_kernels") || logging::debug_level() >= 2;
}

class CcExecutable final : public Executable {
 public:
  /// `file` names the readable copy of the source (build_files/<exe>/<file>).
  CcExecutable(CompileRequest request, codegen::GeneratedSource source,
               std::shared_ptr<cc::SharedLibrary> library, const std::string& file)
      : request_(std::move(request)), source_(std::move(source)), library_(std::move(library)) {
    entry_ = reinterpret_cast<EntryFn>(library_->symbol(source_.entry_symbol));
    if (!source_.profile_symbol.empty()) {
      table_ = reinterpret_cast<ProfileFn>(library_->symbol(source_.profile_symbol))();
      for (std::int64_t k = 0; k < table_->kernels; ++k)
        timings_.push_back({table_->labels[k], file, table_->lines[k], 0, 0});
    }
  }

  void run(std::span<Buffer* const> buffers, std::span<const std::int64_t> static_values) override {
    const std::vector<std::byte*> pointers = host_pointers(request_, buffers, static_values);
    std::vector<void*> args(pointers.begin(), pointers.end());
    const int status = entry_(args.data(), static_values.data());
    if (table_ != nullptr) collect_timings();
    if (status != 0)
      throw ResourceError("routine " + std::string(source_.entry_symbol.substr(kEntryPrefix.size())) +
                          " could not allocate its scratch memory (status " + std::to_string(status) +
                          "); free memory or use smaller batches");
  }

  const std::string& source() const override { return source_.text; }
  const ir::LoweredRoutine& routine() const override { return request_.routine; }
  std::vector<KernelTiming> kernel_timings() const override { return timings_; }

 private:
  CompileRequest request_;
  codegen::GeneratedSource source_;
  std::shared_ptr<cc::SharedLibrary> library_;
  EntryFn entry_ = nullptr;
  const codegen::KernelProfileTable* table_ = nullptr;
  std::vector<KernelTiming> timings_;

  // Moves the library's counters into this executable's totals: two executables of the same
  // source share one loaded library (and its counters), so each takes what its own call added.
  void collect_timings() {
    for (std::size_t k = 0; k < timings_.size(); ++k) {
      timings_[k].calls += table_->calls[k];
      timings_[k].total_ns += table_->total_ns[k];
      table_->calls[k] = 0;
      table_->total_ns[k] = 0;
    }
  }
};

// The target record of the current configuration: the toolchain's vector width and OpenMP,
// `cc_threads`, `cc_parallel_chunks` and the index type (`index_prec`, `large_models`).
ir::Target cc_target() {
  const cc::ParallelSettings parallel = cc::parallel_settings(cc::find_toolchain());
  ir::Target t = ir::cpu_target(parallel.vector_bytes);
  t.backend = "cc";
  t.parallel_runtime = parallel.openmp_grid;
  t.threads = parallel.threads;
  t.grid_chunks = parallel.chunks;
  t.index_dtype = configured_index_dtype(t.index_dtype);
  return t;
}

class CcBackend final : public Backend {
 public:
  std::string_view name() const override { return "cc"; }
  ir::Target target() const override { return cc_target(); }
  std::string fingerprint() const override {
    const cc::Toolchain& tc = cc::find_toolchain();
    std::string out = "cc\n" + tc.identity + "\n";
    for (const auto& flag : cc::compile_flags(tc)) out += flag + " ";
    return out;
  }
  ir::LoweredRoutine default_schedule(const ir::LoweredRoutine& routine) const override {
    return schedule::maybe_default_cpu_schedule(routine, target());
  }
  ir::LoweredRoutine default_schedule_for(const ir::LoweredRoutine& routine, const ir::Target& target) const override {
    return schedule::maybe_default_cpu_schedule(routine, target);
  }
  std::unique_ptr<Buffer> allocate(std::size_t bytes) override {
    return std::make_unique<CpuBuffer>(bytes);
  }
  std::unique_ptr<Executable> compile(const CompileRequest& request) override {
    const codegen::CodegenOptions options{.target = request.target.value_or(target()),
                                          .profile_kernels = profile_kernels()};
    const ir::LoweredRoutine lowered = schedule::lower_for_target(request.routine, options.target);
    if (config::get_bool("cc_split")) {
      const codegen::SplitOptions split_options{
          .unit_lines = static_cast<std::size_t>(config::get_int_in("cc_split_unit_lines", 1, 1 << 20))};
      codegen::SplitSource split = codegen::emit_c_split(lowered, request.params, options, split_options);
      if (split.kernels >= kMinSplitKernels) return compile_split(request, lowered, options, std::move(split));
    }
    codegen::GeneratedSource source = codegen::emit_c(lowered, request.params, options);
    // The entry symbol is "cannl_entry_<sanitized routine name>"; files use the routine name.
    const std::string& entry = source.entry_symbol;
    const std::string file_stem = entry.substr(kEntryPrefix.size());
    auto library = cc::load_or_compile(file_stem, source.text,
                                       cc::kernel_link_options(source.text, options.target));
    return std::make_unique<CcExecutable>(CompileRequest{lowered, request.params}, std::move(source), std::move(library),
                                          file_stem + ".c");
  }

 private:
  // Routines with fewer kernels are one file: splitting them saves no compile time.
  static constexpr int kMinSplitKernels = 8;

  std::unique_ptr<Executable> compile_split(const CompileRequest& request, const ir::LoweredRoutine& lowered,
                                            const codegen::CodegenOptions& options, codegen::SplitSource split) {
    std::vector<cc::CompileUnit> units;
    std::string all;
    for (auto& u : split.units) {
      all += u.text;
      units.push_back({u.name, std::move(u.text), u.hot, u.plain});
    }
    const std::string& entry = split.routine.entry_symbol;
    const std::string file_stem = entry.substr(kEntryPrefix.size());
    const ir::Target& target = options.target;
    auto library = cc::load_or_compile_units(
        file_stem, units, [&all, &target] { return cc::kernel_link_options(all, target); },
        cc::kernel_link_key(all, target));
    if (logging::debug_level() >= 1)
      logging::info("cc: " + file_stem + ": " + std::to_string(split.kernels) + " kernels, " +
                    std::to_string(split.unique_kernels) + " distinct, in " + std::to_string(units.size()) +
                    " files");
    // source(): every unit, the main one first.
    split.routine.text = all;
    return std::make_unique<CcExecutable>(CompileRequest{lowered, request.params}, std::move(split.routine),
                                          std::move(library), file_stem + ".c");
  }
};

}  // namespace

std::shared_ptr<Backend> make_cc_backend() {
  cc::find_toolchain();  // BackendUnavailable now rather than at the first compile
  return std::make_shared<CcBackend>();
}

}  // namespace cannl::backends
