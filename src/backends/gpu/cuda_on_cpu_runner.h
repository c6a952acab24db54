#pragma once
// Runs a kernel of a CUDA module compiled for the CPU (the cuda-cpu device, cuda_on_cpu_device.h):
// the blocks one after another, each block's threads as fibers on the calling thread. A thread
// runs until it waits, at __syncthreads or at a warp operation (a shuffle, an mma.sync, an
// ldmatrix), and the waiters are released together once every thread the operation names has
// arrived, so a thread sees what the others wrote before the barrier and nothing they write
// after it, in whichever order the threads run.
//
// What a GPU leaves undefined, and a cannl kernel must never do, is a RuntimeError naming the
// kernel, the block, the threads and the source line (of the module's .cu file):
//  * a barrier that some threads of the block never reach (they returned, or wait elsewhere);
//  * a warp operation whose mask names a lane that does not take part;
//  * an ldmatrix row or a 16-byte cp.async at an address that is not 16-byte aligned.
// A shuffle's value from a lane outside the mask comes back as a NaN pattern, never a
// plausible number; shared memory holds 0xff bytes until written; a cp.async lands when its
// thread waits for it (forward order) or at once (reverse order), the two legal extremes; a
// thread that returns with copies in flight is an error too.
//
//   CpuKernelRunner runner;
//   runner.run({.name = "k0", .entry = entry, .self_slot = slot}, geometry, args, CpuThreadOrder::Forward);

#include <cstddef>
#include <memory>
#include <string>

#include "backends/gpu/cuda_on_cpu_abi.h"
#include "cannl/ir/kernel_geometry.h"

namespace cannl::backends::gpu {

/// A kernel of a loaded module: its entry (cannl_cpu_entry_<name>) and where the module reads
/// the running thread's indices from.
struct CpuKernel {
  std::string name;
  void (*entry)(void**) = nullptr;
  const cannl_cpu_thread** self_slot = nullptr;
  int arity = 0;  // its parameters
  // The module's shared memory (all its __shared__ arrays), filled with 0xff before each block.
  char* shared_begin = nullptr;
  char* shared_end = nullptr;
};

/// The order blocks, and threads within a block, start and resume in. Reverse runs the last
/// thread first: a kernel whose result depends on the order (a race) gives other numbers.
enum class CpuThreadOrder { Forward, Reverse };

class CpuKernelRunner {
 public:
  /// `stack_bytes` of stack per thread (a guard page below each: an overflow faults).
  explicit CpuKernelRunner(std::size_t stack_bytes = std::size_t{256} << 10);
  ~CpuKernelRunner();
  CpuKernelRunner(const CpuKernelRunner&) = delete;
  CpuKernelRunner& operator=(const CpuKernelRunner&) = delete;

  /// Runs every block of `geometry` with the kernel arguments `args` (cuLaunchKernel's form: a
  /// pointer to each argument's value). Not reentrant; one launch at a time per runner.
  void run(const CpuKernel& kernel, const ir::KernelGeometry& geometry, void** args, CpuThreadOrder order);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// The entry points every module is bound to (cannl_cpu_bind).
const cannl_cpu_runtime& cpu_runtime();

}  // namespace cannl::backends::gpu
