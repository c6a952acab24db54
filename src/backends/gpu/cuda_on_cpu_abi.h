/* The interface between a CUDA module compiled for the CPU (cuda_on_cpu_shim.h, prepended to the
   module's text) and the cuda-cpu device that runs it (cuda_on_cpu_runner.h). Plain C types
   only: the module's own text defines the fixed-width integer names (int64_t is `long long`
   there, `long` in the host's <stdint.h>), so neither side may include <stdint.h> here.

   The module exports
     const struct cannl_cpu_thread** cannl_cpu_self_slot(void);   where the running thread's
                                                                   indices are published
     void cannl_cpu_bind(const struct cannl_cpu_runtime* rt);     the runner's entry points
     void cannl_cpu_shared(char** begin, char** end);             its shared memory (both null
                                                                   when it has none)
     void cannl_cpu_entry_<kernel>(void** args);                  each kernel, its arguments as
                                                                   cuLaunchKernel takes them */
#ifndef CANNL_CUDA_ON_CPU_ABI_H
#define CANNL_CUDA_ON_CPU_ABI_H

#ifdef __cplusplus
extern "C" {
#endif

struct cannl_cpu_dim3 {
  unsigned int x, y, z;
};

/* threadIdx, blockIdx, blockDim and gridDim of one thread of a launch. */
struct cannl_cpu_thread {
  struct cannl_cpu_dim3 thread, block, block_dim, grid_dim;
};

/* What a module calls for the operations its threads do together. `site` is the source line of
   the call (the module's text starts at line 1), so that a report can name the barrier. */
struct cannl_cpu_runtime {
  /* __syncthreads(). */
  void (*syncthreads)(int site);
  /* __shfl_down_sync(mask, value, delta) over the lanes of `mask` (each lane's value as the low
     bytes of `bits`): the bits of lane (this lane + delta), or this lane's own past lane 31. */
  unsigned long long (*shfl_down)(unsigned int mask, unsigned long long bits, unsigned int delta, int site);
  /* mma.sync.aligned.{m16n8k16 bf16 (format 0), m16n8k16 f16 (1), m16n8k8 tf32 (2)}.row.col with
     f32 accumulators: c[0..4) += a * b, each lane holding its fragment registers. */
  void (*mma)(int format, float* c, const unsigned int* a, const unsigned int* b, int site);
  /* ldmatrix.sync.aligned.m8n8.x4{.trans}.shared.b16: `row` is this lane's row address. */
  void (*ldmatrix)(int trans, unsigned int* r, const unsigned short* row, int site);
  /* cp.async of `bytes` (4 or 16) from src to dst, those past src_bytes written as zeros; it
     lands when this thread waits for its copies (cp_async_wait_all). */
  void (*cp_async)(void* dst, const void* src, int bytes, int src_bytes, int site);
  void (*cp_async_wait_all)(int site);
  /* The f16 bits of `x`, rounded to nearest even (cvt.rn.f16.f32). */
  unsigned short (*f16_bits)(float x);
  /* A vector load (site: its line) or store (site 0) of `bytes` at an address not aligned to
     them: a misaligned address on a GPU. Called only for such an access; does not return. */
  void (*misaligned_vector)(const void* address, int bytes, int site);
};

#ifdef __cplusplus
}
#endif

#endif
