#pragma once
// Introspection of the cc backend (the C backend itself is made by make_cc_backend() in
// backend.h): how often this process ran the C compiler, so tests can check the compile cache.
//
//   int before = backends::cc::compiler_invocations();
//   backend->compile(request);                   // cached: no compiler run
//   assert(backends::cc::compiler_invocations() == before);

namespace cannl::backends::cc {

/// Number of times this process has run the C compiler on generated code (probes excluded).
int compiler_invocations();

}  // namespace cannl::backends::cc
