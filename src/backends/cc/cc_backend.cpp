// The cc backend: generated C, compiled by the system C compiler, cached, dlopen'ed.
#include <functional>
#include <span>

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
      profile_ = reinterpret_cast<ProfileFn>(library_->symbol(source_.profile_symbol));
      const codegen::KernelProfileTable* table = profile_();
      for (std::int64_t k = 0; k < table->kernels; ++k)
        timings_.push_back({table->labels[k], file, table->lines[k], 0, 0});
    }
  }

  void run(std::span<Buffer* const> buffers, std::span<const std::int64_t> static_values) override {
    const std::vector<std::byte*> pointers = host_pointers(request_, buffers, static_values);
    std::vector<void*> args(pointers.begin(), pointers.end());
    const int status = entry_(args.data(), static_values.data());
    if (profile_ != nullptr) collect_timings();
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
  ProfileFn profile_ = nullptr;
  std::vector<KernelTiming> timings_;

  // Moves the library's counters into this executable's totals, right after its call and on its
  // thread: two executables of the same source share one loaded library, whose counters are per
  // thread, so each takes what its own call added even while the other runs on another thread
  // (the devices of cpu_devices).
  void collect_timings() {
    const codegen::KernelProfileTable* table = profile_();
    for (std::size_t k = 0; k < timings_.size(); ++k) {
      timings_[k].calls += table->calls[k];
      timings_[k].total_ns += table->total_ns[k];
      table->calls[k] = 0;
      table->total_ns[k] = 0;
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
    Printed printed = print(request);
    auto library = build(printed);
    if (printed.split && logging::debug_level() >= 1)
      logging::info("cc: " + printed.file_stem + ": " + std::to_string(printed.kernels) + " kernels, " +
                    std::to_string(printed.unique_kernels) + " distinct, in " + std::to_string(printed.units.size()) +
                    " files");
    const std::string file = printed.file_stem + ".c";
    return std::make_unique<CcExecutable>(CompileRequest{std::move(printed.lowered), request.params},
                                          std::move(printed.source), std::move(library), file);
  }

  /// Prints every request (in this thread: the printer is not shared across threads), then runs
  /// their builds at once on `cc_compile_jobs` workers; the libraries land in the compile cache,
  /// where the compiles of the same requests find them.
  void prebuild(std::span<const CompileRequest> requests) override {
    std::vector<Printed> printed;
    for (const auto& request : requests) {
      try {
        printed.push_back(print(request));
      } catch (const UserError&) {
        // Its compile throws the same error, where the caller expects it.
      }
    }
    std::vector<std::function<void()>> jobs;
    for (const Printed& p : printed) jobs.push_back([&p] { build(p); });
    try {
      cc::run_in_parallel(jobs, cc::compile_jobs());
    } catch (const UserError&) {
      // A failing build fails again, with its compiler output, in its compile.
    }
  }

 private:
  // Routines with fewer kernels are one file: splitting them saves no compile time.
  static constexpr int kMinSplitKernels = 8;

  /// A request after the final lowering round and the printer: what the toolchain builds.
  struct Printed {
    ir::LoweredRoutine lowered;
    ir::Target target;
    /// The routine's source (split: every unit, the main one first, for Executable::source()).
    codegen::GeneratedSource source;
    std::string file_stem;
    bool split = false;
    std::vector<cc::CompileUnit> units;  // split only
    int kernels = 0, unique_kernels = 0;
  };

  Printed print(const CompileRequest& request) const {
    const codegen::CodegenOptions options{.target = request.target.value_or(target()),
                                          .profile_kernels = profile_kernels()};
    Printed p;
    p.target = options.target;
    p.lowered = schedule::lower_for_target(request.routine, options.target);
    if (config::get_bool("cc_split")) {
      const codegen::SplitOptions split_options{
          .unit_lines = static_cast<std::size_t>(config::get_int_in("cc_split_unit_lines", 1, 1 << 20))};
      codegen::SplitSource split = codegen::emit_c_split(p.lowered, request.params, options, split_options);
      if (split.kernels >= kMinSplitKernels) {
        std::string all;
        for (auto& u : split.units) {
          all += u.text;
          p.units.push_back({u.name, std::move(u.text), u.hot, u.plain});
        }
        split.routine.text = std::move(all);
        p.source = std::move(split.routine);
        p.split = true;
        p.kernels = split.kernels;
        p.unique_kernels = split.unique_kernels;
      }
    }
    if (!p.split) p.source = codegen::emit_c(p.lowered, request.params, options);
    // The entry symbol is "cannl_entry_<sanitized routine name>"; files use the routine name.
    p.file_stem = p.source.entry_symbol.substr(kEntryPrefix.size());
    return p;
  }

  /// Loads the library of `p` from the compile cache, or compiles it (thread-safe: files and
  /// compiler processes only).
  static std::shared_ptr<cc::SharedLibrary> build(const Printed& p) {
    const std::string& all = p.source.text;
    const ir::Target& target = p.target;
    if (!p.split) return cc::load_or_compile(p.file_stem, all, cc::kernel_link_options(all, target));
    return cc::load_or_compile_units(
        p.file_stem, p.units, [&all, &target] { return cc::kernel_link_options(all, target); },
        cc::kernel_link_key(all, target));
  }
};

}  // namespace

std::shared_ptr<Backend> make_cc_backend() {
  cc::find_toolchain();  // BackendUnavailable now rather than at the first compile
  return std::make_shared<CcBackend>();
}

}  // namespace cannl::backends
