/* A mock of the CUDA driver API for the CUDA device's tests on machines without a GPU: two
 * devices whose memory is host memory, and the one kernel it knows, axpy2d (device_checks.h), runs
 * on the host from the launch's geometry and parameter array. Every call checks what the real
 * driver would reject or what would go wrong only sometimes there: a context current on the
 * calling thread, a stream of that context's device (non-blocking), a cubin image, balanced
 * retains and releases, peer access enabled once and only where the devices can reach each other.
 * The test compiles it with the system C compiler and loads it as the driver. */
#include <stdlib.h>
#include <string.h>

typedef int CUresult;
typedef unsigned long long CUdeviceptr;
enum {
  OK = 0, INVALID_VALUE = 1, OUT_OF_MEMORY = 2, INVALID_IMAGE = 200, INVALID_CONTEXT = 201,
  INVALID_HANDLE = 400, NOT_FOUND = 500
};

#define DEVICES 2
static int g_context[DEVICES]; /* their addresses are the primary contexts */
static int g_stream[DEVICES];  /* the streams of device d all have the address &g_stream[d] */
static int g_module, g_function, g_event;
static _Thread_local void* t_current;
static int g_retains[DEVICES], g_live_allocations, g_live_modules, g_live_events, g_streams, g_launches;
static int g_errors; /* calls that would have failed on a real driver */
static int g_peer_access = 1, g_peer_enabled[DEVICES][DEVICES], g_peer_copies, g_stream_waits;
static int g_stuck;
static int g_pinned, g_live_pinned; /* page-locked host allocations: made, alive */ /* events never complete (a collective waiting for a dead peer) */

static int bad(void) { ++g_errors; return INVALID_CONTEXT; }
/* The device whose context is current on this thread, or -1. */
static int current_device(void) {
  for (int d = 0; d < DEVICES; ++d)
    if (t_current == &g_context[d] && g_retains[d] > 0) return d;
  return -1;
}
static int context_device(void* context) {
  for (int d = 0; d < DEVICES; ++d)
    if (context == &g_context[d]) return d;
  return -1;
}
#define NEED_CONTEXT() do { if (current_device() < 0) return bad(); } while (0)
#define NEED_STREAM(s) do { NEED_CONTEXT(); if ((s) != (void*)&g_stream[current_device()]) { ++g_errors; return INVALID_HANDLE; } } while (0)

/* For the test: counters of misuse and of objects still alive; whether devices reach each other. */
int mock_errors(void) { return g_errors; }
int mock_live_objects(void) {
  int live = g_live_allocations + g_live_modules + g_live_events + g_streams + g_live_pinned;
  for (int d = 0; d < DEVICES; ++d) live += g_retains[d];
  return live;
}
int mock_launches(void) { return g_launches; }
int mock_peer_copies(void) { return g_peer_copies; }
int mock_stream_waits(void) { return g_stream_waits; }
int mock_pinned_allocations(void) { return g_pinned; }
void mock_set_peer_access(int can) { g_peer_access = can; }
void mock_set_stuck(int stuck) { g_stuck = stuck; }

CUresult cuInit(unsigned flags) { return flags == 0 ? OK : INVALID_VALUE; }
CUresult cuDriverGetVersion(int* version) { *version = 13000; return OK; }
CUresult cuGetErrorName(CUresult error, const char** name) {
  *name = error == OUT_OF_MEMORY ? "CUDA_ERROR_OUT_OF_MEMORY" : "CUDA_ERROR_MOCK";
  return OK;
}
CUresult cuGetErrorString(CUresult error, const char** text) { (void)error; *text = "mock error"; return OK; }
CUresult cuDeviceGetCount(int* count) { *count = DEVICES; return OK; }
CUresult cuDeviceGet(int* device, int ordinal) {
  if (ordinal < 0 || ordinal >= DEVICES) return INVALID_VALUE;
  *device = ordinal;
  return OK;
}
CUresult cuDeviceGetAttribute(int* value, int attribute, int device) {
  (void)device;
  switch (attribute) {
    case 1: *value = 1024; return OK;                      /* threads per block */
    case 2: case 3: *value = 1024; return OK;              /* block x, y */
    case 4: *value = 64; return OK;                        /* block z */
    case 5: *value = 2147483647; return OK;                /* grid x */
    case 6: case 7: *value = 65535; return OK;             /* grid y, z */
    case 8: *value = 49152; return OK;                     /* shared memory per block */
    case 10: *value = 32; return OK;                       /* warp */
    case 16: *value = 4; return OK;                        /* multiprocessors */
    case 75: *value = 9; return OK;                        /* compute capability 9.0 */
    case 76: *value = 0; return OK;
    default: return INVALID_VALUE;
  }
}
CUresult cuDeviceGetName(char* name, int length, int device) {
  (void)device;
  strncpy(name, "Mock GPU", (size_t)length);
  return OK;
}
CUresult cuDevicePrimaryCtxRetain(void** context, int device) {
  if (device < 0 || device >= DEVICES) return INVALID_VALUE;
  ++g_retains[device];
  *context = &g_context[device];
  return OK;
}
CUresult cuDevicePrimaryCtxRelease_v2(int device) {
  if (device < 0 || device >= DEVICES) return INVALID_VALUE;
  if (g_retains[device]-- > 0) return OK;
  ++g_retains[device];
  return bad();
}
CUresult cuCtxSetCurrent(void* context) { t_current = context; return OK; }
CUresult cuStreamCreate(void** stream, unsigned flags) {
  NEED_CONTEXT();
  if (flags != 1) { ++g_errors; return INVALID_VALUE; } /* CU_STREAM_NON_BLOCKING */
  ++g_streams;
  *stream = &g_stream[current_device()];
  return OK;
}
CUresult cuStreamDestroy_v2(void* stream) { NEED_STREAM(stream); --g_streams; return OK; }
CUresult cuStreamSynchronize(void* stream) { NEED_STREAM(stream); return OK; }
CUresult cuMemAlloc_v2(CUdeviceptr* pointer, size_t bytes) {
  NEED_CONTEXT();
  if (bytes == 0) return INVALID_VALUE;
  if (bytes > ((size_t)1 << 40)) return OUT_OF_MEMORY;
  unsigned char* memory = malloc(bytes);
  if (memory == NULL) return OUT_OF_MEMORY;
  memset(memory, 0xAB, bytes); /* the device must zero it */
  ++g_live_allocations;
  *pointer = (CUdeviceptr)memory;
  return OK;
}
CUresult cuMemFree_v2(CUdeviceptr pointer) { NEED_CONTEXT(); free((void*)pointer); --g_live_allocations; return OK; }
CUresult cuMemsetD8Async(CUdeviceptr pointer, unsigned char value, size_t count, void* stream) {
  NEED_STREAM(stream);
  memset((void*)pointer, value, count);
  return OK;
}
CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void* src, size_t bytes, void* stream) {
  NEED_STREAM(stream);
  memcpy((void*)dst, src, bytes);
  return OK;
}
CUresult cuMemcpyDtoHAsync_v2(void* dst, CUdeviceptr src, size_t bytes, void* stream) {
  NEED_STREAM(stream);
  memcpy(dst, (const void*)src, bytes);
  return OK;
}
CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr dst, CUdeviceptr src, size_t bytes, void* stream) {
  NEED_STREAM(stream);
  memmove((void*)dst, (const void*)src, bytes);
  return OK;
}
CUresult cuModuleLoadDataEx(void** module, const void* image, unsigned count, int* options, void** values) {
  NEED_CONTEXT();
  if (count != 2 || options[0] != 5 || options[1] != 6 || values[0] == NULL) { ++g_errors; return INVALID_VALUE; }
  if (memcmp(image, "\x7f" "ELF", 4) != 0) { /* a cubin; the log names the problem */
    strncpy((char*)values[0], "mock: not a cubin", (size_t)values[1]);
    return INVALID_IMAGE;
  }
  ++g_live_modules;
  *module = &g_module;
  return OK;
}
CUresult cuModuleUnload(void* module) { NEED_CONTEXT(); if (module != &g_module) return bad(); --g_live_modules; return OK; }
CUresult cuModuleGetFunction(void** function, void* module, const char* name) {
  NEED_CONTEXT();
  if (module != &g_module) return bad();
  if (strcmp(name, "axpy2d") != 0) return NOT_FOUND;
  *function = &g_function;
  return OK;
}
/* axpy2d(float* c, const float* a, const float* b, long long s, long long rows, long long cols) */
CUresult cuLaunchKernel(void* function, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                        unsigned bz, unsigned shared, void* stream, void** params, void** extra) {
  NEED_STREAM(stream);
  if (function != &g_function || shared != 0 || extra != NULL || params == NULL) { ++g_errors; return INVALID_VALUE; }
  if (gx == 0 || gy == 0 || gz == 0 || bx == 0 || by == 0 || bz == 0) { ++g_errors; return INVALID_VALUE; }
  float* c = (float*)*(CUdeviceptr*)params[0];
  const float* a = (const float*)*(CUdeviceptr*)params[1];
  const float* b = (const float*)*(CUdeviceptr*)params[2];
  const long long s = *(long long*)params[3], rows = *(long long*)params[4], cols = *(long long*)params[5];
  for (unsigned z = 0; z < gz * bz; ++z)
    for (unsigned y = 0; y < gy * by; ++y)
      for (unsigned x = 0; x < gx * bx; ++x) {
        const long long i = y, j = x;
        if (i < rows && j < cols) c[i * cols + j] = a[i * cols + j] + b[i * cols + j] * (float)s;
      }
  ++g_launches;
  return OK;
}
CUresult cuEventCreate(void** event, unsigned flags) {
  NEED_CONTEXT();
  if (flags != 2) { ++g_errors; return INVALID_VALUE; } /* CU_EVENT_DISABLE_TIMING */
  ++g_live_events;
  *event = &g_event;
  return OK;
}
CUresult cuEventDestroy_v2(void* event) { NEED_CONTEXT(); if (event != &g_event) return bad(); --g_live_events; return OK; }
CUresult cuEventRecord(void* event, void* stream) { NEED_STREAM(stream); return event == &g_event ? OK : bad(); }
CUresult cuEventSynchronize(void* event) { NEED_CONTEXT(); return event == &g_event ? OK : bad(); }
CUresult cuEventQuery(void* event) {
  NEED_CONTEXT();
  if (event != &g_event) return bad();
  return g_stuck ? 600 : OK; /* CUDA_ERROR_NOT_READY */
}
CUresult cuEventElapsedTime(float* ms, void* start, void* end) {
  NEED_CONTEXT();
  if (start != &g_event || end != &g_event) return bad();
  *ms = 0;
  return OK;
}
CUresult cuStreamWaitEvent(void* stream, void* event, unsigned flags) {
  NEED_STREAM(stream);
  if (event != &g_event || flags != 0) return bad();
  ++g_stream_waits;
  return OK;
}
CUresult cuDeviceCanAccessPeer(int* can, int device, int peer) {
  if (device < 0 || device >= DEVICES || peer < 0 || peer >= DEVICES) return INVALID_VALUE;
  *can = g_peer_access && device != peer;
  return OK;
}
CUresult cuCtxEnablePeerAccess(void* peer, unsigned flags) {
  NEED_CONTEXT();
  const int self = current_device(), other = context_device(peer);
  if (other < 0 || other == self || flags != 0 || !g_peer_access) return bad();
  if (g_peer_enabled[self][other]) return 704; /* CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED */
  g_peer_enabled[self][other] = 1;
  return OK;
}
CUresult cuMemcpyPeerAsync(CUdeviceptr dst, void* dst_context, CUdeviceptr src, void* src_context, size_t bytes,
                           void* stream) {
  NEED_STREAM(stream);
  const int to = context_device(dst_context), from = context_device(src_context);
  if (to < 0 || from < 0 || to != current_device()) return bad();
  if (to != from && !g_peer_enabled[to][from]) return bad(); /* cannl copies peer to peer only once enabled */
  memmove((void*)dst, (const void*)src, bytes);
  ++g_peer_copies;
  return OK;
}
CUresult cuMemHostAlloc(void** pointer, size_t bytes, unsigned flags) {
  NEED_CONTEXT();
  if (flags != 1 || bytes == 0) { ++g_errors; return INVALID_VALUE; } /* CU_MEMHOSTALLOC_PORTABLE */
  *pointer = malloc(bytes);
  if (*pointer == NULL) return OUT_OF_MEMORY;
  ++g_pinned;
  ++g_live_pinned;
  return OK;
}
CUresult cuMemFreeHost(void* pointer) {
  NEED_CONTEXT();
  free(pointer);
  --g_live_pinned;
  return OK;
}
