/* A mock of the HIP runtime for the HIP device's tests on machines without an AMD GPU: two
 * devices whose memory is host memory, and the one kernel it knows, axpy2d (device_checks.h), runs on the host
 * from the launch's geometry and parameter array. Every call checks what the real runtime would
 * reject or what would go wrong only sometimes there: the device current on the calling thread,
 * the stream the device created (non-blocking), an AMDGPU code object (an ELF) as the image,
 * balanced creations and destructions. The test compiles it with the system C compiler and loads
 * it as the runtime. */
#include <stdlib.h>
#include <string.h>

typedef int hipError_t;
enum { OK = 0, INVALID_VALUE = 1, OUT_OF_MEMORY = 2, INVALID_IMAGE = 200, INVALID_HANDLE = 400, NOT_FOUND = 500,
       INVALID_DEVICE = 101 };

#define DEVICES 2
static int g_stream[DEVICES];                /* the streams of device d all have the address &g_stream[d] */
static int g_module, g_function, g_event;    /* their addresses are the handles */
static _Thread_local int t_current = -1;     /* hipSetDevice's ordinal on this thread */
static int g_live_allocations, g_live_modules, g_live_events, g_streams, g_launches;
static int g_errors; /* calls that would have failed on a real runtime */
static size_t g_printf_fifo;
static int g_peer_access = 1, g_peer_enabled[DEVICES][DEVICES], g_peer_copies, g_stream_waits;

static int bad(void) { ++g_errors; return INVALID_DEVICE; }
#define NEED_DEVICE() do { if (t_current < 0 || t_current >= DEVICES) return bad(); } while (0)
#define NEED_STREAM(s) do { NEED_DEVICE(); if ((s) != (void*)&g_stream[t_current]) { ++g_errors; return INVALID_HANDLE; } } while (0)
#define VALID_ORDINAL(o) ((o) >= 0 && (o) < DEVICES)

/* For the test: counters of misuse and of objects still alive, the printf buffer's size. */
int mock_errors(void) { return g_errors; }
int mock_live_objects(void) { return g_live_allocations + g_live_modules + g_live_events + g_streams; }
int mock_launches(void) { return g_launches; }
size_t mock_printf_fifo(void) { return g_printf_fifo; }
int mock_peer_copies(void) { return g_peer_copies; }
int mock_stream_waits(void) { return g_stream_waits; }
void mock_set_peer_access(int can) { g_peer_access = can; }

hipError_t hipInit(unsigned flags) { return flags == 0 ? OK : INVALID_VALUE; }
hipError_t hipRuntimeGetVersion(int* version) { *version = 60231234; return OK; }
const char* hipGetErrorName(hipError_t error) { return error == OUT_OF_MEMORY ? "hipErrorOutOfMemory" : "hipErrorMock"; }
const char* hipGetErrorString(hipError_t error) { (void)error; return "mock error"; }
hipError_t hipGetDeviceCount(int* count) { *count = DEVICES; return OK; }
hipError_t hipSetDevice(int ordinal) { if (!VALID_ORDINAL(ordinal)) return INVALID_DEVICE; t_current = ordinal; return OK; }
hipError_t hipDeviceGet(int* device, int ordinal) { if (!VALID_ORDINAL(ordinal)) return INVALID_DEVICE; *device = ordinal; return OK; }
hipError_t hipDeviceGetAttribute(int* value, int attribute, int ordinal) {
  if (!VALID_ORDINAL(ordinal)) return INVALID_DEVICE;
  switch (attribute) {
    case 56: *value = 1024; return OK;                     /* threads per block */
    case 26: case 27: case 28: *value = 1024; return OK;   /* block x, y, z */
    case 29: case 30: case 31: *value = 2147483647; return OK; /* grid x, y, z */
    case 74: *value = 65536; return OK;                    /* LDS per block */
    case 87: *value = 64; return OK;                       /* wave */
    case 63: *value = 4; return OK;                        /* compute units */
    default: return INVALID_VALUE;
  }
}
hipError_t hipDeviceGetName(char* name, int length, int device) {
  (void)device;
  strncpy(name, "Mock AMD GPU", (size_t)length);
  return OK;
}
/* The ROCm 5 layout: name at 0, gcnArchName at 396 of 792 bytes. */
hipError_t hipGetDeviceProperties(void* properties, int ordinal) {
  if (!VALID_ORDINAL(ordinal)) return INVALID_DEVICE;
  memset(properties, 0, 792);
  strcpy((char*)properties, "Mock AMD GPU");
  strcpy((char*)properties + 396, "gfx90a:sramecc+:xnack-");
  return OK;
}
hipError_t hipDeviceSetLimit(int limit, size_t value) {
  NEED_DEVICE();
  if (limit != 1) { ++g_errors; return INVALID_VALUE; } /* hipLimitPrintfFifoSize */
  g_printf_fifo = value;
  return OK;
}
hipError_t hipStreamCreateWithFlags(void** stream, unsigned flags) {
  NEED_DEVICE();
  if (flags != 1) { ++g_errors; return INVALID_VALUE; } /* hipStreamNonBlocking */
  ++g_streams;
  *stream = &g_stream[t_current];
  return OK;
}
hipError_t hipStreamDestroy(void* stream) { NEED_STREAM(stream); --g_streams; return OK; }
hipError_t hipStreamSynchronize(void* stream) { NEED_STREAM(stream); return OK; }
hipError_t hipMalloc(void** pointer, size_t bytes) {
  NEED_DEVICE();
  if (bytes == 0) return INVALID_VALUE;
  if (bytes > ((size_t)1 << 40)) return OUT_OF_MEMORY;
  unsigned char* memory = malloc(bytes);
  if (memory == NULL) return OUT_OF_MEMORY;
  memset(memory, 0xAB, bytes); /* the device must zero it */
  ++g_live_allocations;
  *pointer = memory;
  return OK;
}
hipError_t hipFree(void* pointer) { NEED_DEVICE(); free(pointer); --g_live_allocations; return OK; }
hipError_t hipMemsetD8Async(void* pointer, unsigned char value, size_t count, void* stream) {
  NEED_STREAM(stream);
  memset(pointer, value, count);
  return OK;
}
hipError_t hipMemcpyHtoDAsync(void* dst, void* src, size_t bytes, void* stream) {
  NEED_STREAM(stream);
  memcpy(dst, src, bytes);
  return OK;
}
hipError_t hipMemcpyDtoHAsync(void* dst, void* src, size_t bytes, void* stream) {
  NEED_STREAM(stream);
  memcpy(dst, src, bytes);
  return OK;
}
hipError_t hipMemcpyDtoDAsync(void* dst, void* src, size_t bytes, void* stream) {
  NEED_STREAM(stream);
  memmove(dst, src, bytes);
  return OK;
}
hipError_t hipModuleLoadData(void** module, const void* image) {
  NEED_DEVICE();
  const unsigned char* elf = image;
  /* An AMDGPU ELF: the magic, then e_machine EM_AMDGPU (224) at byte 18. */
  if (memcmp(elf, "\x7f" "ELF", 4) != 0 || elf[18] != 224) return INVALID_IMAGE;
  ++g_live_modules;
  *module = &g_module;
  return OK;
}
hipError_t hipModuleUnload(void* module) { NEED_DEVICE(); if (module != &g_module) return bad(); --g_live_modules; return OK; }
hipError_t hipModuleGetFunction(void** function, void* module, const char* name) {
  NEED_DEVICE();
  if (module != &g_module) return bad();
  if (strcmp(name, "axpy2d") != 0) return NOT_FOUND;
  *function = &g_function;
  return OK;
}
/* axpy2d(float* c, const float* a, const float* b, long long s, long long rows, long long cols) */
hipError_t hipModuleLaunchKernel(void* function, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                                 unsigned bz, unsigned shared, void* stream, void** params, void** extra) {
  NEED_STREAM(stream);
  if (function != &g_function || shared != 0 || extra != NULL || params == NULL) { ++g_errors; return INVALID_VALUE; }
  if (gx == 0 || gy == 0 || gz == 0 || bx == 0 || by == 0 || bz == 0) { ++g_errors; return INVALID_VALUE; }
  float* c = *(float**)params[0];
  const float* a = *(const float**)params[1];
  const float* b = *(const float**)params[2];
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
hipError_t hipEventCreateWithFlags(void** event, unsigned flags) {
  NEED_DEVICE();
  if (flags != 2 && flags != 0) { ++g_errors; return INVALID_VALUE; } /* hipEventDisableTiming, or timing */
  ++g_live_events;
  *event = &g_event;
  return OK;
}
hipError_t hipEventDestroy(void* event) { NEED_DEVICE(); if (event != &g_event) return bad(); --g_live_events; return OK; }
hipError_t hipEventRecord(void* event, void* stream) { NEED_STREAM(stream); return event == &g_event ? OK : bad(); }
hipError_t hipEventSynchronize(void* event) { NEED_DEVICE(); return event == &g_event ? OK : bad(); }
hipError_t hipEventElapsedTime(float* ms, void* start, void* end) {
  NEED_DEVICE();
  if (start != &g_event || end != &g_event) return bad();
  *ms = 0;
  return OK;
}
hipError_t hipStreamWaitEvent(void* stream, void* event, unsigned flags) {
  NEED_STREAM(stream);
  if (event != &g_event || flags != 0) return bad();
  ++g_stream_waits;
  return OK;
}
hipError_t hipDeviceCanAccessPeer(int* can, int device, int peer) {
  if (!VALID_ORDINAL(device) || !VALID_ORDINAL(peer)) return INVALID_DEVICE;
  *can = g_peer_access && device != peer;
  return OK;
}
hipError_t hipDeviceEnablePeerAccess(int peer, unsigned flags) {
  NEED_DEVICE();
  if (!VALID_ORDINAL(peer) || peer == t_current || flags != 0 || !g_peer_access) return bad();
  if (g_peer_enabled[t_current][peer]) return 704; /* hipErrorPeerAccessAlreadyEnabled */
  g_peer_enabled[t_current][peer] = 1;
  return OK;
}
hipError_t hipMemcpyPeerAsync(void* dst, int dst_device, const void* src, int src_device, size_t bytes, void* stream) {
  NEED_STREAM(stream);
  if (!VALID_ORDINAL(dst_device) || !VALID_ORDINAL(src_device) || dst_device != t_current) return bad();
  if (dst_device != src_device && !g_peer_enabled[dst_device][src_device]) return bad();
  memmove(dst, src, bytes);
  ++g_peer_copies;
  return OK;
}
