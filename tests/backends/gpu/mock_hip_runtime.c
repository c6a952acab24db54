/* A mock of the HIP runtime for the HIP device's tests on machines without an AMD GPU: two
 * devices whose memory is host memory, and the one kernel it knows, axpy2d (device_checks.h), runs on the host
 * from the launch's geometry and parameter array. Every call checks what the real runtime would
 * reject or what would go wrong only sometimes there: the device current on the calling thread,
 * the stream the device created (non-blocking), an AMDGPU code object (an ELF) as the image,
 * balanced creations and destructions. Kernels other than axpy2d run nothing; every launch, direct
 * or in a graph, and every memset is written to a log (mock_log) in one form, as in
 * mock_cuda_driver.c; graphs are left out when compiled with MOCK_WITHOUT_GRAPHS. The test compiles
 * it with the system C compiler and loads it as the runtime. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int hipError_t;
enum { OK = 0, INVALID_VALUE = 1, OUT_OF_MEMORY = 2, INVALID_IMAGE = 200, INVALID_HANDLE = 400, NOT_FOUND = 500,
       INVALID_DEVICE = 101 };

#define DEVICES 2
static int g_stream[DEVICES];                /* the streams of device d all have the address &g_stream[d] */
static int g_module, g_event;                /* their addresses are the handles */
/* Kernels: the code object names them; a test declares how many 8-byte arguments each takes, and
 * may lower the most threads a block of one may have (HIP_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK:
 * 1024, as the device's, unless its launch bounds allow fewer). */
#define FUNCTIONS 256
#define MAX_ARGS 64
typedef struct { char name[128]; int arity; int max_threads; } mock_function;
static mock_function g_functions[FUNCTIONS];
static int g_function_count;
static const unsigned char* g_image; /* of the loaded module */
static size_t g_image_size;
static char* g_log;
static size_t g_log_size, g_log_capacity;
int mock_live_graphs(void);
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
int mock_live_objects(void) { return g_live_allocations + g_live_modules + g_live_events + g_streams + mock_live_graphs(); }
int mock_launches(void) { return g_launches; }
const char* mock_log(void) { return g_log == NULL ? "" : g_log; }
void mock_clear_log(void) { g_log_size = 0; if (g_log != NULL) g_log[0] = 0; }
static void log_line(const char* line) {
  const size_t n = strlen(line);
  if (g_log_size + n + 1 > g_log_capacity) {
    g_log_capacity = 2 * (g_log_size + n + 1);
    g_log = realloc(g_log, g_log_capacity);
  }
  memcpy(g_log + g_log_size, line, n + 1);
  g_log_size += n;
}
static mock_function* find_function(const char* name) {
  for (int k = 0; k < g_function_count; ++k)
    if (strcmp(g_functions[k].name, name) == 0) return &g_functions[k];
  if (g_function_count == FUNCTIONS || strlen(name) >= sizeof g_functions[0].name) return NULL;
  mock_function* f = &g_functions[g_function_count++];
  strcpy(f->name, name);
  f->arity = strcmp(name, "axpy2d") == 0 ? 6 : -1;
  f->max_threads = 1024;
  return f;
}
static int is_function(const void* f) {
  return f >= (const void*)g_functions && f < (const void*)(g_functions + g_function_count);
}
void mock_declare_kernel(const char* name, int arity) { mock_function* f = find_function(name); if (f) f->arity = arity; }
void mock_set_kernel_max_threads(const char* name, int threads) { mock_function* f = find_function(name); if (f) f->max_threads = threads; }
static void perform_memset(void* pointer, size_t count) {
  char line[96];
  snprintf(line, sizeof line, "memset %llx %zu\n", (unsigned long long)pointer, count);
  log_line(line);
  memset(pointer, 0, count);
}
size_t mock_printf_fifo(void) { return g_printf_fifo; }
int mock_peer_copies(void) { return g_peer_copies; }
int mock_stream_waits(void) { return g_stream_waits; }
void mock_set_peer_access(int can) { g_peer_access = can; }

hipError_t hipInit(unsigned flags) { return flags == 0 ? OK : INVALID_VALUE; }
hipError_t hipRuntimeGetVersion(int* version) { *version = 60231234; return OK; }
const char* hipGetErrorName(hipError_t error) { return error == OUT_OF_MEMORY ? "hipErrorOutOfMemory" : "hipErrorMock"; }
const char* hipGetErrorString(hipError_t error) { (void)error; return "mock error"; }
hipError_t hipGetDeviceCount(int* count) { *count = DEVICES; return OK; }
/* Device 0 until the thread sets one, as the real runtime says; the mock's other calls are
 * stricter than the runtime and need a hipSetDevice on the thread first (NEED_DEVICE). */
hipError_t hipGetDevice(int* ordinal) { *ordinal = t_current < 0 ? 0 : t_current; return OK; }
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
  if (value != 0) { memset(pointer, value, count); return OK; }
  perform_memset(pointer, count);
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
  /* The ELF's extent: the furthest of its section header table and its sections' bytes. */
  unsigned long long shoff; unsigned short shentsize, shnum;
  memcpy(&shoff, elf + 0x28, 8); memcpy(&shentsize, elf + 0x3A, 2); memcpy(&shnum, elf + 0x3C, 2);
  size_t extent = (size_t)(shoff + (unsigned long long)shentsize * shnum);
  for (unsigned k = 0; k < shnum; ++k) {
    const unsigned char* header = elf + shoff + (size_t)k * shentsize;
    unsigned type; unsigned long long offset, size;
    memcpy(&type, header + 4, 4); memcpy(&offset, header + 0x18, 8); memcpy(&size, header + 0x20, 8);
    if (type != 8 && offset + size > extent) extent = (size_t)(offset + size); /* SHT_NOBITS has no bytes */
  }
  g_image = elf;
  g_image_size = extent;
  ++g_live_modules;
  *module = &g_module;
  return OK;
}
hipError_t hipModuleUnload(void* module) { NEED_DEVICE(); if (module != &g_module) return bad(); --g_live_modules; return OK; }
hipError_t hipModuleGetFunction(void** function, void* module, const char* name) {
  NEED_DEVICE();
  if (module != &g_module) return bad();
  /* A kernel is a symbol of the code object: its name between two NULs of the string table. */
  const size_t n = strlen(name);
  int found = 0;
  for (size_t k = 0; k + n + 2 <= g_image_size && !found; ++k)
    found = g_image[k] == 0 && g_image[k + n + 1] == 0 && memcmp(g_image + k + 1, name, n) == 0;
  if (!found) return NOT_FOUND;
  mock_function* f = find_function(name);
  if (f == NULL) return bad();
  *function = f;
  return OK;
}
/* HIP_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK (0) only. */
hipError_t hipFuncGetAttribute(int* value, int attribute, void* function) {
  NEED_DEVICE();
  if (!is_function(function) || attribute != 0) { ++g_errors; return INVALID_VALUE; }
  *value = ((mock_function*)function)->max_threads;
  return OK;
}
/* One kernel launch, direct or from a graph node: logged; axpy2d also runs. */
typedef struct {
  mock_function* function;
  unsigned grid[3], block[3];
  int arity;
  unsigned long long args[MAX_ARGS];
} mock_launch;
/* axpy2d(float* c, const float* a, const float* b, long long s, long long rows, long long cols) */
static void perform(const mock_launch* l) {
  char line[2048];
  int at = snprintf(line, sizeof line, "%s grid %u %u %u block %u %u %u args", l->function->name, l->grid[0],
                    l->grid[1], l->grid[2], l->block[0], l->block[1], l->block[2]);
  for (int k = 0; k < l->arity && at < (int)sizeof line - 24; ++k) at += snprintf(line + at, sizeof line - at, " %llx", l->args[k]);
  snprintf(line + at, sizeof line - at, "\n");
  log_line(line);
  if (strcmp(l->function->name, "axpy2d") != 0) return;
  float* c = (float*)l->args[0];
  const float* a = (const float*)l->args[1];
  const float* b = (const float*)l->args[2];
  const long long s = (long long)l->args[3], rows = (long long)l->args[4], cols = (long long)l->args[5];
  for (unsigned z = 0; z < l->grid[2] * l->block[2]; ++z)
    for (unsigned y = 0; y < l->grid[1] * l->block[1]; ++y)
      for (unsigned x = 0; x < l->grid[0] * l->block[0]; ++x) {
        const long long i = y, j = x;
        if (i < rows && j < cols) c[i * cols + j] = a[i * cols + j] + b[i * cols + j] * (float)s;
      }
}
/* What a real runtime checks of a launch; fills `l`, or returns the error. */
static hipError_t describe_launch(mock_launch* l, void* function, const unsigned grid[3], const unsigned block[3],
                                  unsigned shared, void** params, void** extra) {
  if (!is_function(function) || shared != 0 || extra != NULL || params == NULL) { ++g_errors; return INVALID_VALUE; }
  l->function = function;
  l->arity = l->function->arity;
  if (l->arity < 0 || l->arity > MAX_ARGS) { ++g_errors; return INVALID_VALUE; } /* the test did not declare it */
  for (int k = 0; k < 3; ++k) {
    if (grid[k] == 0 || block[k] == 0) { ++g_errors; return INVALID_VALUE; }
    l->grid[k] = grid[k];
    l->block[k] = block[k];
  }
  /* More threads than the kernel's launch bounds allow: the runtime refuses the launch. */
  if ((unsigned long long)block[0] * block[1] * block[2] > (unsigned long long)l->function->max_threads) {
    ++g_errors;
    return INVALID_VALUE;
  }
  for (int k = 0; k < l->arity; ++k) l->args[k] = *(unsigned long long*)params[k]; /* copied, as the runtime does */
  return OK;
}
hipError_t hipModuleLaunchKernel(void* function, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                                 unsigned bz, unsigned shared, void* stream, void** params, void** extra) {
  NEED_STREAM(stream);
  const unsigned grid[3] = {gx, gy, gz}, block[3] = {bx, by, bz};
  mock_launch l;
  const hipError_t r = describe_launch(&l, function, grid, block, shared, params, extra);
  if (r != OK) return r;
  perform(&l);
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

/* ---- graphs ---- */
static int g_graph_instantiations, g_graph_launches, g_graph_updates, g_live_graphs;
static int g_fail_instantiate;
int mock_graph_instantiations(void) { return g_graph_instantiations; }
int mock_graph_launches(void) { return g_graph_launches; }
int mock_graph_updates(void) { return g_graph_updates; }
int mock_live_graphs(void) { return g_live_graphs; }
void mock_fail_graph_instantiate(int fail) { g_fail_instantiate = fail; }

#ifndef MOCK_WITHOUT_GRAPHS
#define GRAPHS 16
#define NODES 512
typedef struct { int kind; /* 1 kernel, 2 memset */ mock_launch launch; void* dst; size_t bytes; } mock_node;
typedef struct { int live; int count; mock_node nodes[NODES]; } mock_graph;
typedef struct { int live; mock_graph* graph; int count; mock_node nodes[NODES]; } mock_exec;
static mock_graph g_graphs[GRAPHS];
static mock_exec g_execs[GRAPHS];

/* hipKernelNodeParams and hipMemsetParams as hip_runtime_api.h lays them out. */
typedef struct { unsigned x, y, z; } dim3;
typedef struct {
  dim3 blockDim; void** extra; void* func; dim3 gridDim; void** kernelParams; unsigned sharedMemBytes;
} kernel_node_params;
typedef struct { void* dst; unsigned elementSize; size_t height, pitch; unsigned value; size_t width; } memset_node_params;

static mock_graph* live_graph(void* graph) {
  mock_graph* g = graph;
  return g >= g_graphs && g < g_graphs + GRAPHS && g->live ? g : NULL;
}
static mock_exec* live_exec(void* exec) {
  mock_exec* e = exec;
  return e >= g_execs && e < g_execs + GRAPHS && e->live ? e : NULL;
}
/* The next node of `g`, after checking that it depends on exactly the node added before it. */
static mock_node* add_node(mock_graph* g, void* const* dependencies, size_t count) {
  if (g->count == NODES) return NULL;
  if (g->count == 0 ? count != 0 : count != 1 || dependencies[0] != &g->nodes[g->count - 1]) return NULL;
  return &g->nodes[g->count++];
}

hipError_t hipGraphCreate(void** graph, unsigned flags) {
  if (flags != 0) { ++g_errors; return INVALID_VALUE; }
  for (int k = 0; k < GRAPHS; ++k)
    if (!g_graphs[k].live) {
      g_graphs[k].live = 1;
      g_graphs[k].count = 0;
      ++g_live_graphs;
      *graph = &g_graphs[k];
      return OK;
    }
  return OUT_OF_MEMORY;
}
hipError_t hipGraphDestroy(void* graph) {
  mock_graph* g = live_graph(graph);
  if (g == NULL) return bad();
  g->live = 0;
  --g_live_graphs;
  return OK;
}
hipError_t hipGraphAddKernelNode(void** node, void* graph, void* const* dependencies, size_t count,
                                 const kernel_node_params* p) {
  NEED_DEVICE();
  mock_graph* g = live_graph(graph);
  if (g == NULL) return bad();
  const unsigned grid[3] = {p->gridDim.x, p->gridDim.y, p->gridDim.z}, block[3] = {p->blockDim.x, p->blockDim.y, p->blockDim.z};
  mock_launch l;
  const hipError_t r = describe_launch(&l, p->func, grid, block, p->sharedMemBytes, p->kernelParams, p->extra);
  if (r != OK) return r;
  mock_node* n = add_node(g, dependencies, count);
  if (n == NULL) return bad();
  n->kind = 1;
  n->launch = l;
  *node = n;
  return OK;
}
hipError_t hipGraphAddMemsetNode(void** node, void* graph, void* const* dependencies, size_t count,
                                 const memset_node_params* p) {
  NEED_DEVICE();
  mock_graph* g = live_graph(graph);
  if (g == NULL) return bad();
  if (p->value != 0 || p->elementSize != 1 || p->height != 1 || p->width == 0 || p->dst == NULL) return bad();
  mock_node* n = add_node(g, dependencies, count);
  if (n == NULL) return bad();
  n->kind = 2;
  n->dst = p->dst;
  n->bytes = p->width;
  *node = n;
  return OK;
}
hipError_t hipGraphInstantiateWithFlags(void** exec, void* graph, unsigned long long flags) {
  NEED_DEVICE();
  mock_graph* g = live_graph(graph);
  if (g == NULL || flags != 0) return bad();
  if (g_fail_instantiate) return 999; /* hipErrorUnknown */
  for (int k = 0; k < GRAPHS; ++k)
    if (!g_execs[k].live) {
      mock_exec* e = &g_execs[k];
      e->live = 1;
      e->graph = g;
      e->count = g->count;
      memcpy(e->nodes, g->nodes, sizeof(mock_node) * (size_t)g->count);
      ++g_live_graphs;
      ++g_graph_instantiations;
      *exec = e;
      return OK;
    }
  return OUT_OF_MEMORY;
}
hipError_t hipGraphExecDestroy(void* exec) {
  mock_exec* e = live_exec(exec);
  if (e == NULL) return bad();
  e->live = 0;
  --g_live_graphs;
  return OK;
}
hipError_t hipGraphExecKernelNodeSetParams(void* exec, void* node, const kernel_node_params* p) {
  NEED_DEVICE();
  mock_exec* e = live_exec(exec);
  /* The node is one of the graph it was instantiated from, which must still be alive. */
  if (e == NULL || live_graph(e->graph) == NULL) return bad();
  mock_node* n = node;
  if (n < e->graph->nodes || n >= e->graph->nodes + e->graph->count || n->kind != 1) return bad();
  mock_node* target = &e->nodes[n - e->graph->nodes];
  const unsigned grid[3] = {p->gridDim.x, p->gridDim.y, p->gridDim.z}, block[3] = {p->blockDim.x, p->blockDim.y, p->blockDim.z};
  mock_launch l;
  const hipError_t r = describe_launch(&l, p->func, grid, block, p->sharedMemBytes, p->kernelParams, p->extra);
  if (r != OK) return r;
  if (l.function != target->launch.function) return bad(); /* an update may not change the kernel */
  target->launch = l;
  ++g_graph_updates;
  return OK;
}
hipError_t hipGraphLaunch(void* exec, void* stream) {
  NEED_STREAM(stream);
  mock_exec* e = live_exec(exec);
  if (e == NULL) return bad();
  for (int k = 0; k < e->count; ++k) {
    if (e->nodes[k].kind == 1) perform(&e->nodes[k].launch);
    else perform_memset(e->nodes[k].dst, e->nodes[k].bytes);
  }
  ++g_graph_launches;
  return OK;
}
#endif
