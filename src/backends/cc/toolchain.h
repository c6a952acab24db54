#pragma once
// The C toolchain of the cc backend: which compiler, its identity (for the compile cache) and the
// flags derived from the configuration (cc_compiler, cc_optimization_level, cc_fp_contract,
// cc_arch_flags, cc_fast_math, cc_extra_flags; see docs/config.md).
//
//   const Toolchain& tc = find_toolchain();    // BackendUnavailable when no compiler runs
//   std::vector<std::string> flags = compile_flags(tc);

#include <string>
#include <vector>

namespace cannl::backends::cc {

struct Toolchain {
  std::string path;      // resolved compiler path, e.g. /usr/bin/cc
  std::string identity;  // `--version` output and path: part of every cache digest
};

/// The compiler named by `cc_compiler`, else the first of cc, gcc, clang that runs. Probed once
/// per process and compiler setting. Throws BackendUnavailable with how to fix it.
const Toolchain& find_toolchain();

/// Compiler flags (without source, output and libraries) for the current configuration, with
/// -fopenmp when `openmp` (the source uses OpenMP pragmas).
/// Throws ConfigError on a bad cc_fp_contract value.
std::vector<std::string> compile_flags(const Toolchain& tc, bool openmp = false);

/// The target part of compile_flags: the architecture (cc_arch_flags: -march=native where the
/// compiler takes it) and the workarounds for the compiler's known miscompiles; nothing that
/// changes how a correct compile rounds.
std::vector<std::string> target_flags(const Toolchain& tc);
/// Flags that keep libm calls calls: GCC and clang rewrite pow with a literal exponent
/// (pow(x, -1.0) into 1.0 / x, even at -O0), which rounds otherwise than libm's pow, the
/// interpreter's, for a few inputs in 10^4.
std::vector<std::string> libm_call_flags();

/// Whether the compiler builds and links an OpenMP shared library with -fopenmp (probed once per
/// compiler).
bool openmp_available(const Toolchain& tc);

/// The widest f32 SIMD vector, in bytes, of the target the current flags select: 64 with
/// AVX-512 (F and VL), 32 with AVX2, 16 with SSE2 or NEON, else 0 (probed once per compiler and
/// flags from the compiler's predefined macros).
int target_vector_bytes(const Toolchain& tc);

/// What the compile cache's keys add to the flags' words: "" unless a flag names the machine it
/// runs on (-march=native, -mcpu=native, also from cc_extra_flags), else a digest of the target
/// those words select here (the compiler's predefined macros: its instruction set extensions).
/// A cache shared between machines (cc_kernel_cache_dir in a network home, a copied build
/// directory) then never serves one CPU's library to another, where it would die on an illegal
/// instruction. Probed once per compiler and flags.
std::string target_identity(const Toolchain& tc);

/// Code generation options of the current configuration (cc_parallel_grid, cc_parallel_chunks,
/// cc_threads, cc_vector_bytes) resolved against the toolchain's probes. Throws ConfigError on a
/// bad value, or when openmp is required but the compiler lacks it.
struct ParallelSettings {
  bool openmp_grid = false;
  int chunks = 0;
  int threads = 0;
  int vector_bytes = 0;
};
ParallelSettings parallel_settings(const Toolchain& tc);

/// A scratch file path unique to this process and call, under the system temp directory.
std::string scratch_path(const std::string& stem, const std::string& extension);

}  // namespace cannl::backends::cc
