/* What makes the CUDA C++ cannl prints (codegen/gpu/cuda_dialect.cpp) compile as host C++ for
   the cuda-cpu device (cuda_on_cpu_device.h): the CUDA qualifiers, the thread indices of the
   running fiber, the bit casts, the vector types, and the device operations threads do
   together (barrier, shuffle, mma.sync, ldmatrix, cp.async) as calls into the runner
   (cuda_on_cpu_runner.h). The module's inline PTX is in `#ifdef __CUDA_ARCH__` blocks, which a
   host compiler skips; the macros below stand for those helpers, with the caller's line.
   Prepended to the module after cuda_on_cpu_abi.h; the module's text follows with `#line 1`. */
#include <math.h>

/* The module defines the fixed-width integer names itself, as NVRTC wants them (int64_t is
   `long long`); the host's <math.h> has already declared them (int64_t is `long` there). The
   module's own names get names of their own: the same types, no conflict. */
#define int8_t cannl_cuda_int8_t
#define uint8_t cannl_cuda_uint8_t
#define int16_t cannl_cuda_int16_t
#define uint16_t cannl_cuda_uint16_t
#define int32_t cannl_cuda_int32_t
#define uint32_t cannl_cuda_uint32_t
#define int64_t cannl_cuda_int64_t
#define uint64_t cannl_cuda_uint64_t

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(...)
/* One block runs at a time in a module (the device serializes launches): a static is the
   block's shared memory. Every __shared__ array lies in the section cannl_shared, which the
   runner fills with 0xff bytes (a NaN, -1) before each block: a kernel that reads a cell no
   thread of the block wrote gets that, as a GPU's leftovers, and never a plausible zero. */
#define __shared__ static __attribute__((section("cannl_shared")))
extern "C" char __start_cannl_shared[] __attribute__((weak));
extern "C" char __stop_cannl_shared[] __attribute__((weak));
extern "C" void cannl_cpu_shared(char** begin, char** end) {
  *begin = __start_cannl_shared;
  *end = __stop_cannl_shared;
}
#define __align__(n) __attribute__((aligned(n)))

static const struct cannl_cpu_runtime* cannl_cpu_rt;
static const struct cannl_cpu_thread* cannl_cpu_self;

extern "C" const struct cannl_cpu_thread** cannl_cpu_self_slot(void) { return &cannl_cpu_self; }
extern "C" void cannl_cpu_bind(const struct cannl_cpu_runtime* rt) { cannl_cpu_rt = rt; }

#define threadIdx (cannl_cpu_self->thread)
#define blockIdx (cannl_cpu_self->block)
#define blockDim (cannl_cpu_self->block_dim)
#define gridDim (cannl_cpu_self->grid_dim)
#define warpSize 32

#define __syncthreads() cannl_cpu_rt->syncthreads(__LINE__)

static inline float __int_as_float(int x) { float f; __builtin_memcpy(&f, &x, sizeof f); return f; }
static inline int __float_as_int(float x) { int i; __builtin_memcpy(&i, &x, sizeof i); return i; }
static inline double __longlong_as_double(long long x) { double d; __builtin_memcpy(&d, &x, sizeof d); return d; }
static inline long long __double_as_longlong(double x) { long long i; __builtin_memcpy(&i, &x, sizeof i); return i; }

template <class T>
static inline T cannl_cpu_shfl_down(unsigned int mask, T value, unsigned int delta, int site) {
  static_assert(sizeof(T) <= 8, "a shuffle moves at most 8 bytes");
  unsigned long long bits = 0;
  __builtin_memcpy(&bits, &value, sizeof value);
  bits = cannl_cpu_rt->shfl_down(mask, bits, delta, site);
  T out;
  __builtin_memcpy(&out, &bits, sizeof out);
  return out;
}
#define __shfl_down_sync(mask, value, delta) cannl_cpu_shfl_down((mask), (value), (delta), __LINE__)

/* CUDA's vector types, aligned as on the device. A GPU faults on a vector access at an address
   not aligned to its size; the host compiler may split one into scalar moves that do not. So the
   16-byte types, which the CUDA dialect loads and stores through (`const float4 v = *(const
   float4 *)&x[i]`), check each copy from memory (its line named) or into it (a store). */
static inline void cannl_cpu_vector_at(const void* address, int bytes, int site) {
  if (((unsigned long long)address & (unsigned long long)(bytes - 1)) != 0)
    cannl_cpu_rt->misaligned_vector(address, bytes, site);
}
#define CANNL_CPU_VECTOR4(V, E)                                                          \
  struct __attribute__((aligned(4 * sizeof(E)))) V {                                     \
    E x, y, z, w;                                                                        \
    V() = default;                                                                       \
    V(E a, E b, E c, E d) : x(a), y(b), z(c), w(d) {}                                    \
    V(const V& o, int site = __builtin_LINE()) : x(o.x), y(o.y), z(o.z), w(o.w) {        \
      cannl_cpu_vector_at(&o, sizeof(V), site);                                          \
    }                                                                                    \
    V& operator=(const V& o) {                                                           \
      cannl_cpu_vector_at(this, sizeof(V), 0);                                           \
      x = o.x, y = o.y, z = o.z, w = o.w;                                                \
      return *this;                                                                      \
    }                                                                                    \
  }
CANNL_CPU_VECTOR4(float4, float);
CANNL_CPU_VECTOR4(int4, int);
CANNL_CPU_VECTOR4(uint4, unsigned int);
struct __attribute__((aligned(8))) float2 { float x, y; };
struct __attribute__((aligned(8))) int2 { int x, y; };
struct __attribute__((aligned(8))) uint2 { unsigned int x, y; };
static inline float2 make_float2(float x, float y) { float2 v = {x, y}; return v; }
static inline float4 make_float4(float x, float y, float z, float w) { float4 v = {x, y, z, w}; return v; }
static inline int2 make_int2(int x, int y) { int2 v = {x, y}; return v; }
static inline int4 make_int4(int x, int y, int z, int w) { int4 v = {x, y, z, w}; return v; }
static inline uint2 make_uint2(unsigned int x, unsigned int y) { uint2 v = {x, y}; return v; }
static inline uint4 make_uint4(unsigned int x, unsigned int y, unsigned int z, unsigned int w) {
  uint4 v = {x, y, z, w};
  return v;
}

/* The tensor-core and asynchronous-copy helpers (codegen/gpu/mma_helpers.h,
   async_copy_helpers.h), with the signatures the CUDA dialect gives them. */
#define cannl_ldsm_x4(r, slice, offset) cannl_cpu_rt->ldmatrix(0, (r), (slice) + (offset), __LINE__)
#define cannl_ldsm_x4_trans(r, slice, offset) cannl_cpu_rt->ldmatrix(1, (r), (slice) + (offset), __LINE__)
#define cannl_mma_bf16(c, a, b) cannl_cpu_rt->mma(0, (c), (a), (b), __LINE__)
#define cannl_mma_f16(c, a, b) cannl_cpu_rt->mma(1, (c), (a), (b), __LINE__)
#define cannl_mma_tf32(c, a, b) cannl_cpu_rt->mma(2, (c), (a), (b), __LINE__)
#define cannl_mma_f16_bits(x) cannl_cpu_rt->f16_bits(x)
#define cannl_cp_async16(dst, src, src_bytes) cannl_cpu_rt->cp_async((dst), (src), 16, (src_bytes), __LINE__)
#define cannl_cp_async4(dst, src, src_bytes) cannl_cpu_rt->cp_async((dst), (src), 4, (src_bytes), __LINE__)
#define cannl_cp_async_commit() ((void)0)
#define cannl_cp_async_wait_all() cannl_cpu_rt->cp_async_wait_all(__LINE__)

/* A kernel called with cuLaunchKernel's arguments (a pointer to each value): the device appends
   `extern "C" void cannl_cpu_entry_<k>(void** args) { cannl_cpu_invoke(&k, args); }` per kernel,
   and its parameter count cannl_cpu_arity_<k>, which the device checks a launch against. */
template <unsigned long... I>
struct cannl_cpu_seq {};
template <unsigned long N, unsigned long... I>
struct cannl_cpu_make_seq : cannl_cpu_make_seq<N - 1, N - 1, I...> {};
template <unsigned long... I>
struct cannl_cpu_make_seq<0, I...> {
  typedef cannl_cpu_seq<I...> type;
};
template <class T>
static inline T cannl_cpu_arg(void* p) {
  T v;
  __builtin_memcpy(&v, p, sizeof v);
  return v;
}
template <class... P, unsigned long... I>
static inline void cannl_cpu_call(void (*kernel)(P...), void** args, cannl_cpu_seq<I...>) {
  kernel(cannl_cpu_arg<P>(args[I])...);
}
template <class... P>
static constexpr int cannl_cpu_arity(void (*)(P...)) {
  return (int)sizeof...(P);
}
template <class... P>
static inline void cannl_cpu_invoke(void (*kernel)(P...), void** args) {
  cannl_cpu_call(kernel, args, typename cannl_cpu_make_seq<sizeof...(P)>::type());
}
