// Toolchain probing and flags of the cc backend (see toolchain.h).
#include "backends/cc/toolchain.h"

#include <unistd.h>

#include <atomic>
#include <cctype>
#include <filesystem>
#include <map>
#include <mutex>
#include <sstream>

#include "backends/cc/process.h"
#include "cannl/support/config.h"
#include "cannl/support/error.h"
#include "cannl/support/files.h"

namespace cannl::backends::cc {

namespace fs = std::filesystem;

std::string scratch_path(const std::string& stem, const std::string& extension) {
  static std::atomic<int> counter{0};
  const auto name = "cannl-" + stem + "-" + std::to_string(getpid()) + "-" + std::to_string(counter++);
  return (fs::temp_directory_path() / (name + extension)).string();
}

namespace {

// Runs `path --version`; returns true with its output when it exits 0.
bool version_of(const std::string& path, std::string& output, std::string& why) {
  const std::string out = scratch_path("version", ".txt");
  const ProcessResult r = run_process({path, "--version"}, out);
  std::error_code ec;
  if (r.started && r.exit_status == 0) {
    output = files::read_file(out);
  } else {
    why = r.started ? "`" + path + " --version` exited with status " + std::to_string(r.exit_status)
                    : r.error;
  }
  fs::remove(out, ec);
  return r.started && r.exit_status == 0;
}

Toolchain probe(const std::string& requested) {
  const std::vector<std::string> candidates =
      requested.empty() ? std::vector<std::string>{"cc", "gcc", "clang"}
                        : std::vector<std::string>{requested};
  std::string why;
  for (const auto& c : candidates) {
    const std::string path = resolve_program(c);
    std::string version;
    if (path.empty()) {
      why = "not found";
      continue;
    }
    if (version_of(path, version, why)) return {path, version + "\n" + path};
  }
  if (requested.empty()) {
    throw BackendUnavailable(
        "no C compiler found: tried cc, gcc, clang; install gcc (apt-get install gcc) or set "
        "cc_compiler");
  }
  throw BackendUnavailable("the C compiler '" + requested + "' (config key cc_compiler, from " +
                           config::source_of("cc_compiler") + ") does not run: " + why +
                           "; install gcc (apt-get install gcc) or set cc_compiler to a working "
                           "compiler");
}

std::vector<std::string> split_words(const std::string& text) {
  std::istringstream in(text);
  std::vector<std::string> out;
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

// -march=native (or -mcpu=native on targets that spell it so) when the compiler accepts it;
// probed once per compiler by compiling an empty file.
std::vector<std::string> native_arch_flags(const Toolchain& tc) {
  static std::mutex mutex;
  static std::map<std::string, std::vector<std::string>> cache;
  std::lock_guard lock(mutex);
  auto it = cache.find(tc.path);
  if (it != cache.end()) return it->second;
  const std::string src = scratch_path("archprobe", ".c");
  const std::string obj = scratch_path("archprobe", ".o");
  const std::string log = scratch_path("archprobe", ".txt");
  files::write_atomically(src, "int cannl_arch_probe;\n");
  std::vector<std::string> chosen;
  for (const char* flag : {"-march=native", "-mcpu=native"}) {
    const ProcessResult r = run_process({tc.path, flag, "-c", src, "-o", obj}, log);
    if (r.started && r.exit_status == 0) {
      chosen = {flag};
      break;
    }
  }
  std::error_code ec;
  for (const auto& p : {src, obj, log}) fs::remove(p, ec);
  return cache[tc.path] = chosen;
}

}  // namespace

const Toolchain& find_toolchain() {
  static std::mutex mutex;
  static std::map<std::string, Toolchain> cache;  // by cc_compiler setting
  const std::string requested = config::get("cc_compiler");
  std::lock_guard lock(mutex);
  auto it = cache.find(requested);
  if (it == cache.end()) it = cache.emplace(requested, probe(requested)).first;
  return it->second;
}

namespace {

/// GCC's major version from its `--version` banner, or 0 for other compilers.
int gcc_major_version(const Toolchain& tc) {
  if (tc.identity.find("Free Software Foundation") == std::string::npos) return 0;
  const std::string first_line = tc.identity.substr(0, tc.identity.find('\n'));
  const auto last_space = first_line.find_last_of(' ');
  const std::string version = first_line.substr(last_space + 1);
  return std::isdigit(static_cast<unsigned char>(version[0])) ? std::stoi(version) : 0;
}

// GCC 12.2 at -O3 -march=native (AVX-512) miscompiles small vectorized nests, both found by the
// gradient parity tests: if-converted conditionals (`g += (x < y) ? 0 : h` over a 2x3 nest got
// a wrong tail lane) and SLP-vectorized strided copies (`ga[i*3+j] = gc[i*4+j]` duplicated a
// lane). Disabling loop if-conversion and SLP vectorization restores correct code.
void add_compiler_workarounds(const Toolchain& tc, std::vector<std::string>& flags) {
  const int gcc = gcc_major_version(tc);
  if (gcc > 0 && gcc <= 12) {
    flags.push_back("-fno-tree-loop-if-convert");
    flags.push_back("-fno-tree-slp-vectorize");
  }
}

}  // namespace

std::vector<std::string> compile_flags(const Toolchain& tc) {
  std::vector<std::string> flags = {"-O" + std::to_string(config::get_int("cc_optimization_level")),
                                    "-std=c11", "-fPIC", "-shared"};
  const std::string contract = config::get("cc_fp_contract");
  if (contract != "off" && contract != "on" && contract != "fast") {
    throw ConfigError("cc_fp_contract must be off, on or fast, got '" + contract + "' (from " +
                      config::source_of("cc_fp_contract") + ")");
  }
  flags.push_back("-ffp-contract=" + contract);
  const std::string arch = config::get("cc_arch_flags");
  const std::vector<std::string> arch_flags =
      arch == "auto" ? native_arch_flags(tc) : arch == "none" ? std::vector<std::string>{} : split_words(arch);
  flags.insert(flags.end(), arch_flags.begin(), arch_flags.end());
  add_compiler_workarounds(tc, flags);
  if (config::get_bool("cc_fast_math")) flags.push_back("-ffast-math");
  for (auto& w : split_words(config::get("cc_extra_flags"))) flags.push_back(w);
  return flags;
}

}  // namespace cannl::backends::cc
