// Compiler driver and compile cache of the cc backend (see compile_cache.h).
#include "backends/cc/compile_cache.h"

#include <algorithm>
#include <cstdlib>
#include <atomic>
#include <exception>
#include <filesystem>
#include <functional>
#include <future>
#include <mutex>
#include <optional>
#include <thread>

#include "backends/cc/cache_entry.h"
#include "backends/cc/process.h"
#include "backends/cc/toolchain.h"
#include "cannl/backends/cc_backend.h"
#include "cannl/support/config.h"
#include "cannl/support/error.h"
#include "cannl/support/files.h"
#include "cannl/support/hash.h"
#include "cannl/support/log.h"

namespace cannl::backends::cc {

namespace fs = std::filesystem;

namespace {

std::atomic<int> g_invocations{0};

std::string join(const std::vector<std::string>& words) {
  std::string out;
  for (const auto& w : words) out += (out.empty() ? "" : " ") + w;
  return out;
}

std::string read_or_empty(const fs::path& path) {
  try {
    return files::read_file(path);
  } catch (const IoError&) {
    return "";
  }
}

[[noreturn]] void throw_compile_error(const ProcessResult& r, const std::string& command,
                                      const std::string& messages, const fs::path& user_source) {
  const std::string status = r.started ? "exit status " + std::to_string(r.exit_status) : r.error;
  throw CompileError("the C compiler failed (" + status + ") on generated source " +
                     user_source.string() + "\n  command: " + command + "\n  compiler output:\n" +
                     messages +
                     "  Check cc_extra_flags, cc_arch_flags and cc_compiler; if the generated code "
                     "itself is invalid, please report it with the .c file.");
}

// The linker arguments of `link` for `library`: its soname, the libraries, their run path.
std::vector<std::string> link_arguments(const LinkOptions& link, const fs::path& library) {
  std::vector<std::string> out;
  if (link.soname) out.push_back("-Wl,-soname," + library.filename().string());
  out.insert(out.end(), link.libraries.begin(), link.libraries.end());
  if (!link.libraries.empty()) out.push_back("-Wl,-rpath,$ORIGIN");
  return out;
}

// The part of the digest `link` adds: the linked libraries by file name (which holds their
// digest), not by directory, so equal caches in different places agree.
std::string link_digest_text(const LinkOptions& link) {
  std::string out = link.soname ? "\nsoname" : "";
  for (const auto& l : link.libraries) out += "\nlink " + fs::path(l).filename().string();
  return out;
}

// Runs the compiler as `tc.path args... -o <temp> tail...` and makes its output the cache entry
// `entry` for `key` (atomically: temp name, record, then rename; see cache_entry.h).
void build_entry(const Toolchain& tc, const std::vector<std::string>& args, const std::vector<std::string>& tail,
                 const fs::path& user_source, const fs::path& entry, const std::string& key) {
  const fs::path temp = files::temporary_beside(entry);
  const fs::path output = temp.string() + ".log";
  std::vector<std::string> argv{tc.path};
  argv.insert(argv.end(), args.begin(), args.end());
  argv.insert(argv.end(), {"-o", temp.string()});
  argv.insert(argv.end(), tail.begin(), tail.end());
  const std::string command = shell_quoted(argv);
  if (logging::debug_level() >= 3) logging::info("cc: " + command);
  ++g_invocations;
  const ProcessResult r = run_process(argv, output);
  const std::string messages = read_or_empty(output);
  std::error_code ec;
  fs::remove(output, ec);
  if (!r.started || r.exit_status != 0) {
    fs::remove(temp, ec);
    throw_compile_error(r, command, messages, user_source);
  }
  commit_cache_entry(temp, entry, key);
}

// Compiles `source_path` into the cache entry `library` for `key`.
void compile(const Toolchain& tc, std::vector<std::string> flags, const fs::path& source_path,
             const fs::path& user_source, const fs::path& library, const std::string& key,
             const LinkOptions& link) {
  flags.push_back(source_path.string());
  std::vector<std::string> tail{"-lm"};
  const std::vector<std::string> linked = link_arguments(link, library);
  tail.insert(tail.end(), linked.begin(), linked.end());
  build_entry(tc, flags, tail, user_source, library, key);
}

// The readable copy of the source for people. Written only when it changed, and a failure is a
// warning: with everything cached, a read-only build_files/ must not stop a run.
void write_readable_copy(const fs::path& user_source, const std::string& source) {
  std::error_code ec;
  if (fs::file_size(user_source, ec) == source.size() && !ec) {
    try {
      if (files::read_file(user_source) == source) return;
    } catch (const IoError&) {
    }
  }
  try {
    files::write_atomically(user_source, source);
  } catch (const IoError& e) {
    static std::once_flag warned;
    std::call_once(warned, [&] { logging::warn(std::string("cannot update the generated C: ") + e.what()); });
  }
}

// Whether the cached library for `key` can be loaded as is; a damaged one is quarantined (with a
// warning) so that it gets rebuilt.
bool usable_cache_entry(const fs::path& library, const std::string& key) {
  const EntryCheck check = check_cache_entry(library, key);
  if (check.state == EntryState::Damaged) quarantine_cache_entry(library, check.problem);
  return check.state == EntryState::Valid;
}

}  // namespace

int compiler_invocations() { return g_invocations.load(); }

int compile_jobs() {
  constexpr int kMaxJobs = 16;
  int jobs = static_cast<int>(config::get_int_in("cc_compile_jobs", 0, kMaxJobs));
  if (jobs == 0) jobs = static_cast<int>(config::get_int_in("cc_threads", 0, 4096));
  if (jobs == 0) jobs = static_cast<int>(std::thread::hardware_concurrency());
  return std::clamp(jobs, 1, kMaxJobs);
}

void run_in_parallel(const std::vector<std::function<void()>>& jobs, int workers) {
  std::atomic<std::size_t> next{0};
  std::mutex mutex;
  std::exception_ptr failure;
  auto work = [&] {
    for (std::size_t k = next++; k < jobs.size(); k = next++) {
      try {
        jobs[k]();
      } catch (...) {
        std::lock_guard lock(mutex);
        if (!failure) failure = std::current_exception();
      }
    }
  };
  std::vector<std::thread> threads;
  const std::size_t count = std::min<std::size_t>(jobs.size(), static_cast<std::size_t>(workers));
  for (std::size_t t = 1; t < count; ++t) threads.emplace_back(work);
  work();
  for (auto& t : threads) t.join();
  if (failure) std::rethrow_exception(failure);
}

namespace {

// Flags of one unit: compile only (-c), at its optimization level.
std::vector<std::string> unit_flags(const Toolchain& tc, bool openmp, int level) {
  std::vector<std::string> flags = compile_flags(tc, openmp);
  std::erase(flags, "-shared");
  for (auto& f : flags)
    if (f.rfind("-O", 0) == 0) f = "-O" + std::to_string(level);
  flags.push_back("-c");
  return flags;
}

bool uses_openmp(const std::string& source) { return source.find("#pragma omp") != std::string::npos; }

}  // namespace

std::shared_ptr<SharedLibrary> load_or_compile_units(const std::string& name, const std::vector<CompileUnit>& units,
                                                     const std::function<LinkOptions()>& link,
                                                     const std::string& link_key) {
  const Toolchain& tc = find_toolchain();
  const fs::path dir = fs::absolute(files::build_dir());
  const fs::path cache_dir = dir / "cache";
  prepare_cache_directory(cache_dir);
  const bool cached = config::get_bool("cc_cache");
  const int top = static_cast<int>(config::get_int_in("cc_optimization_level", 0, 3));
  const int cold = std::min(top, static_cast<int>(config::get_int_in("cc_cold_optimization_level", 0, 3)));

  struct Planned {
    const CompileUnit* unit;
    std::vector<std::string> flags;
    std::string digest;
    fs::path object, user_source;
  };
  std::vector<Planned> planned;
  bool openmp = false;
  const std::string target = target_identity(tc);
  std::string library_text = "units\n" + tc.identity + "\n" + link_key + target;
  for (const auto& u : units) {
    const bool omp = uses_openmp(u.text);
    openmp = openmp || omp;
    Planned p{&u, unit_flags(tc, omp, u.plain ? 0 : u.hot ? top : cold), "", {}, {}};
    p.digest = sha256_hex(u.text + "\n" + tc.identity + "\n" + join(p.flags) + target);
    // Named by the routine and the digest only: a group that moves to another part number
    // (an earlier group split or merged) is still found.
    p.object = cache_dir / (name + "-" + p.digest.substr(0, 16) + ".o");
    p.user_source = dir / (u.name + ".c");
    write_readable_copy(p.user_source, u.text);
    library_text += "\n" + p.digest;
    planned.push_back(std::move(p));
  }
  const std::vector<std::string> link_flags = compile_flags(tc, openmp);
  const std::string digest = sha256_hex(library_text + "\n" + join(link_flags));
  const fs::path library = cache_dir / (name + "-" + digest.substr(0, 16) + ".so");
  if (cached && usable_cache_entry(library, digest)) {
    link();  // loads (and verifies) the libraries it links
    if (logging::debug_level() >= 3) logging::info("cc: reusing " + library.string());
    return SharedLibrary::open(library.string(), openmp);
  }

  // The kernel library the units link may need compiling too: beside the units.
  std::future<LinkOptions> linked = std::async(std::launch::async, link);
  std::vector<const Planned*> missing;
  for (const auto& p : planned)
    if (!(cached && usable_cache_entry(p.object, p.digest))) missing.push_back(&p);
  // Largest first, so that the longest compile does not start last.
  std::stable_sort(missing.begin(), missing.end(),
                   [](const Planned* a, const Planned* b) { return a->unit->text.size() > b->unit->text.size(); });
  std::vector<std::function<void()>> jobs;
  for (const Planned* p : missing) {
    jobs.push_back([&tc, &cache_dir, p] {
      const fs::path cache_source = cache_dir / (p->object.stem().string() + ".c");
      files::write_atomically(cache_source, p->unit->text);
      std::vector<std::string> args = p->flags;
      args.push_back(cache_source.string());
      build_entry(tc, args, {}, p->user_source, p->object, p->digest);
    });
  }
  try {
    run_in_parallel(jobs, compile_jobs());
  } catch (...) {
    linked.wait();
    throw;
  }
  const LinkOptions options = linked.get();
  std::vector<std::string> args = link_flags;
  for (const auto& p : planned) args.push_back(p.object.string());
  std::vector<std::string> tail{"-lm"};
  const std::vector<std::string> libraries = link_arguments(options, library);
  tail.insert(tail.end(), libraries.begin(), libraries.end());
  build_entry(tc, args, tail, planned.front().user_source, library, digest);
  return SharedLibrary::open(library.string(), openmp);
}

namespace {

// Copies the verified cache entry `from` for `key` to `to` (a cache entry of its own, committed
// like a compiler's output). False when `from` is no valid entry or the copy fails: a shared
// cache is an optimization, never a reason to fail.
bool copy_cache_entry(const fs::path& from, const fs::path& to, const std::string& key) {
  if (check_cache_entry(from, key).state != EntryState::Valid) return false;
  const fs::path temp = files::temporary_beside(to);
  std::error_code error;
  fs::copy_file(from, temp, fs::copy_options::overwrite_existing, error);
  if (error) {
    fs::remove(temp, error);
    return false;
  }
  try {
    commit_cache_entry(temp, to, key);
  } catch (const IoError&) {
    return false;
  }
  // A racing writer may have replaced `from` between the check and the copy: check the copy.
  return check_cache_entry(to, key).state == EntryState::Valid;
}

// The shared cache's directory from cc_kernel_cache_dir, or nullopt when there is none.
std::optional<fs::path> shared_cache_dir() {
  const std::string setting = config::get("cc_kernel_cache_dir");
  if (setting == "none" || setting.empty()) return std::nullopt;
  if (setting != "auto") return fs::path(setting);
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg != nullptr && *xdg == '/')
    return fs::path(xdg) / "cannl" / "kernels";
  if (const char* home = std::getenv("HOME"); home != nullptr && *home == '/')
    return fs::path(home) / ".cache" / "cannl" / "kernels";
  return std::nullopt;
}

// Prepares the shared cache directory; nullopt (with a note at debug level 1) when it cannot be.
std::optional<fs::path> usable_shared_cache_dir() {
  auto dir = shared_cache_dir();
  if (!dir) return std::nullopt;
  try {
    prepare_cache_directory(*dir);
  } catch (const IoError& e) {
    if (logging::debug_level() >= 1) logging::info(std::string("cc: no shared kernel cache: ") + e.what());
    return std::nullopt;
  }
  return dir;
}

}  // namespace

std::shared_ptr<SharedLibrary> load_or_compile(const std::string& name, const std::string& source,
                                               const LinkOptions& link) {
  return load_or_compile(name, source, link, false);
}

std::shared_ptr<SharedLibrary> load_or_compile(const std::string& name, const std::string& source,
                                               const LinkOptions& link, bool shared) {
  const Toolchain& tc = find_toolchain();
  // OpenMP only for sources that use it: other libraries need not load the OpenMP runtime.
  const bool openmp = source.find("#pragma omp") != std::string::npos;
  const std::vector<std::string> flags = compile_flags(tc, openmp);
  const std::string digest =
      sha256_hex(source + "\n" + tc.identity + "\n" + join(flags) + target_identity(tc) + link_digest_text(link));
  const fs::path dir = fs::absolute(files::build_dir());
  const fs::path cache_dir = dir / "cache";
  prepare_cache_directory(cache_dir);
  const std::string stem = name + "-" + digest.substr(0, 16);
  const fs::path library = cache_dir / (stem + ".so");
  // The readable copy for people; the compiler reads a digest-named copy, which no other routine
  // of the same name can overwrite while we compile.
  const fs::path user_source = dir / (name + ".c");
  write_readable_copy(user_source, source);
  const bool cached = config::get_bool("cc_cache");
  if (!(cached && usable_cache_entry(library, digest))) {
    const std::optional<fs::path> shared_dir = shared && cached ? usable_shared_cache_dir() : std::nullopt;
    const fs::path shared_entry = shared_dir ? *shared_dir / library.filename() : fs::path();
    if (shared_dir && copy_cache_entry(shared_entry, library, digest)) {
      if (logging::debug_level() >= 3) logging::info("cc: copied " + shared_entry.string());
    } else {
      const fs::path cache_source = cache_dir / (stem + ".c");
      files::write_atomically(cache_source, source);
      compile(tc, flags, cache_source, user_source, library, digest, link);
      if (shared_dir) copy_cache_entry(library, shared_entry, digest);
    }
  } else if (logging::debug_level() >= 3) {
    logging::info("cc: reusing " + library.string());
  }
  return SharedLibrary::open(library.string(), openmp);
}

}  // namespace cannl::backends::cc
