// Compiler driver and compile cache of the cc backend (see compile_cache.h).
#include "backends/cc/compile_cache.h"

#include <atomic>
#include <filesystem>
#include <mutex>

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

// Compiles `source_path` into the cache entry `library` for `key` (atomically: temp name, record,
// then rename; see cache_entry.h).
void compile(const Toolchain& tc, const std::vector<std::string>& flags, const fs::path& source_path,
             const fs::path& user_source, const fs::path& library, const std::string& key,
             const LinkOptions& link) {
  const fs::path temp = files::temporary_beside(library);
  const fs::path output = temp.string() + ".log";
  std::vector<std::string> argv{tc.path};
  argv.insert(argv.end(), flags.begin(), flags.end());
  argv.insert(argv.end(), {source_path.string(), "-o", temp.string(), "-lm"});
  const std::vector<std::string> linked = link_arguments(link, library);
  argv.insert(argv.end(), linked.begin(), linked.end());
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
  commit_cache_entry(temp, library, key);
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

std::shared_ptr<SharedLibrary> load_or_compile(const std::string& name, const std::string& source,
                                               const LinkOptions& link) {
  const Toolchain& tc = find_toolchain();
  // OpenMP only for sources that use it: other libraries need not load the OpenMP runtime.
  const bool openmp = source.find("#pragma omp") != std::string::npos;
  const std::vector<std::string> flags = compile_flags(tc, openmp);
  const std::string digest =
      sha256_hex(source + "\n" + tc.identity + "\n" + join(flags) + link_digest_text(link));
  const fs::path dir = fs::absolute(files::build_dir());
  const fs::path cache_dir = dir / "cache";
  prepare_cache_directory(cache_dir);
  const std::string stem = name + "-" + digest.substr(0, 16);
  const fs::path library = cache_dir / (stem + ".so");
  // The readable copy for people; the compiler reads a digest-named copy, which no other routine
  // of the same name can overwrite while we compile.
  const fs::path user_source = dir / (name + ".c");
  write_readable_copy(user_source, source);
  if (!(config::get_bool("cc_cache") && usable_cache_entry(library, digest))) {
    const fs::path cache_source = cache_dir / (stem + ".c");
    files::write_atomically(cache_source, source);
    compile(tc, flags, cache_source, user_source, library, digest, link);
  } else if (logging::debug_level() >= 3) {
    logging::info("cc: reusing " + library.string());
  }
  return SharedLibrary::open(library.string(), openmp);
}

}  // namespace cannl::backends::cc
