#pragma once
// The kernel libraries of the cc backend: the f32 matmul that generated routines call (declared in
// their prelude, defined in src/codegen/c/kernels/cannl_sgemm.c) is compiled once per vector
// width, blocking and compiler flags into the compile cache as its own shared library
// (build_files/<exe>/cache/cannl_sgemm_x16-<digest16>.so, soname = that file name), and each
// routine that calls it links it by that soname with an $ORIGIN run path, so the loader finds it
// next to the routine. Two configurations (different flags) are different files with different
// sonames, each linked only by its own routines: no global symbols are shared.
//
//   auto lib = load_or_compile(name, text, kernel_link_options(text, 64));

#include <memory>
#include <string>

#include "backends/cc/compile_cache.h"
#include "backends/cc/shared_library.h"
#include "cannl/ir/target.h"

namespace cannl::backends::cc {

/// The kernel library of `vector_bytes`-byte vectors for the current flags: loaded from the cache
/// or compiled, once per process (and kept loaded: it runs an OpenMP team). Its readable source
/// is build_files/<exe>/cannl_sgemm_x<lanes>.c. Throws CompileError like load_or_compile.
std::shared_ptr<SharedLibrary> sgemm_kernel_library(int vector_bytes, const ir::GemmShape& shape = {});

/// What a generated routine links: the kernel library of the target's vector width and kernel
/// shape when its source calls it, else nothing (vector_bytes 0: no explicit SIMD, no kernels).
LinkOptions kernel_link_options(const std::string& routine_source, const ir::Target& target);
/// What kernel_link_options(routine_source, target) will link, named without compiling it: the
/// kernel library's name and the digest of its source ("" when the routine links none). Part of
/// the digest of a library built from units (load_or_compile_units).
std::string kernel_link_key(const std::string& routine_source, const ir::Target& target);
/// The same for the default kernel shape of `vector_bytes`-byte vectors.
LinkOptions kernel_link_options(const std::string& routine_source, int vector_bytes);

}  // namespace cannl::backends::cc
