// Toolchain probing and flags of the cc backend (see toolchain.h).
#include "backends/cc/toolchain.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <filesystem>
#include <future>
#include <map>
#include <mutex>
#include <sstream>

#include "backends/cc/process.h"
#include "cannl/support/config.h"
#include "cannl/support/error.h"
#include "cannl/support/files.h"
#include "cannl/support/hash.h"

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
//
// GCC's loop interchange (-O3, GCC 8 on) swaps the loops of a serial reduction nest without
// -ffast-math, so each cell's additions run in another order and round differently (GCC 12.2:
// `d[i3,i1,i4] += a[i3,i0,i4,i2] * b[i1,i0,32-i2]` over five loops). The schedule has ordered the
// loops already; the pass stays off on every GCC that has it.
void add_compiler_workarounds(const Toolchain& tc, std::vector<std::string>& flags) {
  const int gcc = gcc_major_version(tc);
  if (gcc > 0 && gcc <= 12) {
    flags.push_back("-fno-tree-loop-if-convert");
    flags.push_back("-fno-tree-slp-vectorize");
  }
  if (gcc >= 8) flags.push_back("-fno-loop-interchange");
}

}  // namespace

std::vector<std::string> target_flags(const Toolchain& tc) {
  const std::string arch = config::get("cc_arch_flags");
  std::vector<std::string> flags =
      arch == "auto" ? native_arch_flags(tc) : arch == "none" ? std::vector<std::string>{} : split_words(arch);
  add_compiler_workarounds(tc, flags);
  return flags;
}

std::vector<std::string> libm_call_flags() { return {"-fno-builtin-pow", "-fno-builtin-powf"}; }

std::vector<std::string> compile_flags(const Toolchain& tc, bool openmp) {
  std::vector<std::string> flags = {"-O" + std::to_string(config::get_int_in("cc_optimization_level", 0, 3)),
                                    "-std=c11", "-fPIC", "-shared"};
  const std::string contract = config::get_one_of("cc_fp_contract", {"off", "on", "fast"});
  flags.push_back("-ffp-contract=" + contract);
  const std::vector<std::string> target = target_flags(tc);
  flags.insert(flags.end(), target.begin(), target.end());
  if (config::get_bool("cc_fast_math")) flags.push_back("-ffast-math");
  const std::vector<std::string> libm = libm_call_flags();
  flags.insert(flags.end(), libm.begin(), libm.end());
  if (openmp) flags.push_back("-fopenmp");
  for (auto& w : split_words(config::get("cc_extra_flags"))) flags.push_back(w);
  return flags;
}

namespace {

// Runs the compiler on a scratch C file holding `text` with `args` (source appended at the end
// unless "-" stands for it); returns whether it exited 0 and, in `output`, what it printed.
bool try_compile(const Toolchain& tc, const std::string& text, std::vector<std::string> args,
                 std::string* output = nullptr) {
  const std::string src = scratch_path("probe", ".c");
  const std::string out = scratch_path("probe", ".out");
  const std::string log = scratch_path("probe", ".txt");
  files::write_atomically(src, text);
  std::vector<std::string> argv{tc.path};
  for (auto& a : args) argv.push_back(a == "SRC" ? src : a == "OUT" ? out : a);
  const ProcessResult r = run_process(argv, log);
  const bool ok = r.started && r.exit_status == 0;
  std::error_code ec;
  if (output != nullptr && ok) *output = files::read_file(log);
  for (const auto& p : {src, out, log}) fs::remove(p, ec);
  return ok;
}

}  // namespace

bool openmp_available(const Toolchain& tc) {
  static std::mutex mutex;
  static std::map<std::string, bool> cache;
  std::lock_guard lock(mutex);
  auto it = cache.find(tc.path);
  if (it != cache.end()) return it->second;
  const std::string probe =
      "#include <omp.h>\nint cannl_omp_probe(void) {\n  int n = 0;\n"
      "  #pragma omp parallel for reduction(+ : n)\n  for (int i = 0; i < 4; ++i) n += omp_get_num_threads() > 0;\n"
      "  return n;\n}\n";
  return cache[tc.path] = try_compile(tc, probe, {"-fopenmp", "-fPIC", "-shared", "SRC", "-o", "OUT"});
}

namespace {

// The macros `tc` predefines under `flags` (`-dM -E` of an empty file), "" when it cannot say;
// probed once per compiler and flags.
std::string predefined_macros(const Toolchain& tc, const std::vector<std::string>& flags) {
  static std::mutex mutex;
  static std::map<std::string, std::string> cache;
  std::string key = tc.path;
  for (const auto& f : flags) key += " " + f;
  std::lock_guard lock(mutex);
  auto it = cache.find(key);
  if (it != cache.end()) return it->second;
  std::vector<std::string> args = flags;
  std::erase(args, "-shared");
  args.insert(args.end(), {"-dM", "-E", "SRC"});
  std::string macros;
  if (!try_compile(tc, "int cannl_simd_probe;\n", args, &macros)) macros.clear();
  return cache[key] = macros;
}

}  // namespace

int target_vector_bytes(const Toolchain& tc) {
  const std::string macros = predefined_macros(tc, compile_flags(tc));
  auto has = [&](const char* m) { return macros.find(std::string("#define ") + m + " ") != std::string::npos; };
  if (has("__AVX512F__") && has("__AVX512VL__")) return 64;
  if (has("__AVX2__")) return 32;
  if (has("__SSE2__") || has("__ARM_NEON")) return 16;
  return 0;
}

std::string target_identity(const Toolchain& tc) {
  const std::vector<std::string> flags = compile_flags(tc);
  const bool names_this_machine = std::any_of(flags.begin(), flags.end(), [](const std::string& f) {
    return f.find("=native") != std::string::npos;
  });
  if (!names_this_machine) return "";
  return "\ntarget " + sha256_hex(predefined_macros(tc, flags));
}

ParallelSettings parallel_settings(const Toolchain& tc) {
  ParallelSettings s;
  const std::string grid = config::get_one_of("cc_parallel_grid", {"auto", "openmp", "none"});
  // The OpenMP probe (a compile and link) runs beside the vector-width probes: a process's first
  // compile waits for the longer of them, not for their sum.
  std::future<bool> openmp = std::async(std::launch::async, [&tc, grid] { return grid != "none" && openmp_available(tc); });
  const auto bytes = config::get_int("cc_vector_bytes");
  const int vector_bytes = bytes == -1 ? target_vector_bytes(tc) : static_cast<int>(bytes);
  const bool has_openmp = openmp.get();
  if (grid == "openmp" && !has_openmp) {
    throw ConfigError("cc_parallel_grid=openmp (from " + config::source_of("cc_parallel_grid") +
                      ") but the C compiler " + tc.path +
                      " cannot build OpenMP code with -fopenmp; install libgomp (gcc) or libomp-dev "
                      "(clang), or set cc_parallel_grid=auto");
  }
  s.openmp_grid = grid == "openmp" || (grid == "auto" && has_openmp);
  s.chunks = static_cast<int>(config::get_int_in("cc_parallel_chunks", 0, 1 << 20));
  s.threads = static_cast<int>(config::get_int_in("cc_threads", 0, 4096));
  if (bytes != -1 && bytes != 0 && bytes != 16 && bytes != 32 && bytes != 64) {
    throw ConfigError("cc_vector_bytes must be -1 (auto), 0, 16, 32 or 64, got " + std::to_string(bytes) +
                      " (from " + config::source_of("cc_vector_bytes") + ")");
  }
  s.vector_bytes = vector_bytes;
  return s;
}

}  // namespace cannl::backends::cc
