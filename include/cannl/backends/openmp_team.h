#pragma once
// The team a CPU routine of the cc backend runs with, resolved in one place for the code that
// runs it and for what describes it (the schedule cache's key, tune::this_machine). A routine of
// a target with `threads` set runs that team (its parallel regions name it); without, the OpenMP
// runtime's default team, which the runtime reads once, when it loads, from OMP_NUM_THREADS or
// the CPUs the process may run on. cannl resolves that default once too and makes the runtime
// agree with it (below), so a later change of OMP_NUM_THREADS changes neither the team nor a key.
//
//   backends::cc::routine_team(target)  == 6   // cc_threads=6, or OMP_NUM_THREADS=6 at the start
//   backends::cc::resolved_openmp_team("6,2", 16) == 6

#include "cannl/ir/target.h"

namespace cannl::backends::cc {

/// The OpenMP runtime's rule for its default team: the first number of `omp_num_threads` (the
/// environment variable's value, nullptr when unset; "outer,inner" lists name the outermost level
/// first) when it is a positive integer, else `hardware_threads`. Pure, for tests.
///   resolved_openmp_team(nullptr, 16) == 16;  resolved_openmp_team("many", 16) == 16
int resolved_openmp_team(const char* omp_num_threads, int hardware_threads);

/// The CPUs this process may run on (its affinity mask, as libgomp counts them), at least 1.
int hardware_threads();

/// This process's default OpenMP team, resolved at the first call: the team of the OpenMP
/// runtime already in the process (linked into the program) when there is one, else
/// resolved_openmp_team(OMP_NUM_THREADS, hardware_threads()) as the runtime will resolve it when
/// the cc backend loads its first library. Before that load the cc backend sets OMP_NUM_THREADS
/// to this team where the environment has come to say otherwise since (pin_openmp_team).
int openmp_default_team();

/// Makes the OpenMP runtime about to be loaded start openmp_default_team(): sets OMP_NUM_THREADS
/// to it when the environment now resolves to another team. Called by the cc backend before it
/// opens a library that links the runtime.
void pin_openmp_team();

/// The team a CPU routine of `target` runs with: target.threads when set; 1 without a parallel
/// runtime and on a GPU target (its host side is one thread); else openmp_default_team().
///   routine_team(cpu_target_with_threads_3) == 3
int routine_team(const ir::Target& target);

}  // namespace cannl::backends::cc
