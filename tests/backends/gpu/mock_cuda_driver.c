/* A mock of the CUDA driver API for the CUDA device's tests on machines without a GPU: two
 * devices whose memory is host memory, and the one kernel it knows, axpy2d (device_checks.h), runs
 * on the host from the launch's geometry and parameter array. Every call checks what the real
 * driver would reject or what would go wrong only sometimes there: a context current on the
 * calling thread, a stream of that context's device (non-blocking), a cubin image, balanced
 * retains and releases, peer access enabled once and only where the devices can reach each other.
 * Kernels other than axpy2d run nothing; every launch, direct or in a graph, and every memset is
 * written to a log (mock_log) in one form, so a test compares what a graph launched with what
 * direct launches would have. Graphs (built node by node, a chain; instantiated; launched; their
 * kernel nodes updated) are left out when compiled with MOCK_WITHOUT_GRAPHS, as an older driver.
 * The test compiles it with the system C compiler and loads it as the driver. */
#include <stdio.h>
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
static int g_module, g_event;
/* Kernels: the module's image (a cubin) names them; a test declares how many 8-byte arguments
 * each takes (axpy2d: 6), since the mock reads no parameter layout from the cubin, and may lower
 * the most threads a block of one may have (CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK: 1024, as
 * the device's, unless its registers allow fewer). */
#define FUNCTIONS 256
#define MAX_ARGS 64
typedef struct { char name[128]; int arity; int max_threads; } mock_function;
static mock_function g_functions[FUNCTIONS];
static int g_function_count;
static const unsigned char* g_image; /* of the loaded module */
static size_t g_image_size;
static char* g_log;
static size_t g_log_size, g_log_capacity;
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

int mock_live_graphs(void);
static void perform_memset(CUdeviceptr pointer, size_t count);

/* For the test: counters of misuse and of objects still alive; whether devices reach each other. */
int mock_errors(void) { return g_errors; }
int mock_live_objects(void) {
  int live = g_live_allocations + g_live_modules + g_live_events + g_streams + g_live_pinned + mock_live_graphs();
  for (int d = 0; d < DEVICES; ++d) live += g_retains[d];
  return live;
}
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
int mock_peer_copies(void) { return g_peer_copies; }
int mock_stream_waits(void) { return g_stream_waits; }
int mock_pinned_allocations(void) { return g_pinned; }
/* 0: no peer path; 1: peer access; 2: a path whose access cannot be enabled (too many peers) */
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
CUresult cuCtxGetCurrent(void** context) { *context = t_current; return OK; }
static int g_context_switches;
int mock_context_switches(void) { return g_context_switches; }
CUresult cuCtxSetCurrent(void* context) {
  if (context != t_current) ++g_context_switches;
  t_current = context;
  return OK;
}
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
  if (value != 0) { memset((void*)pointer, value, count); return OK; }
  perform_memset(pointer, count);
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
  /* The ELF's extent: the furthest of its section header table and its sections' bytes. */
  const unsigned char* elf = image;
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
CUresult cuModuleUnload(void* module) { NEED_CONTEXT(); if (module != &g_module) return bad(); --g_live_modules; return OK; }
CUresult cuModuleGetFunction(void** function, void* module, const char* name) {
  NEED_CONTEXT();
  if (module != &g_module) return bad();
  /* A kernel is a symbol of the image: its name between two NULs of the string table. */
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
/* CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK (0) only. */
CUresult cuFuncGetAttribute(int* value, int attribute, void* function) {
  NEED_CONTEXT();
  if (!is_function(function) || attribute != 0) { ++g_errors; return INVALID_VALUE; }
  *value = ((mock_function*)function)->max_threads;
  return OK;
}
/* CUDA 12.4's parameter layout: 8 bytes each; CUDA_ERROR_INVALID_VALUE past the last. A kernel
 * the test did not declare is one the mock cannot tell of (CUDA_ERROR_NOT_SUPPORTED). */
CUresult cuFuncGetParamInfo(void* function, size_t index, size_t* offset, size_t* size) {
  NEED_CONTEXT();
  if (!is_function(function) || offset == NULL) { ++g_errors; return INVALID_VALUE; }
  const mock_function* f = function;
  if (f->arity < 0) return 801;
  if (index >= (size_t)f->arity) return INVALID_VALUE;
  *offset = 8 * index;
  if (size != NULL) *size = 8;
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
static void perform_memset(CUdeviceptr pointer, size_t count) {
  char line[96];
  snprintf(line, sizeof line, "memset %llx %zu\n", pointer, count);
  log_line(line);
  memset((void*)pointer, 0, count);
}
/* What a real driver checks of a launch; fills `l`, or returns the error. */
static CUresult describe_launch(mock_launch* l, void* function, const unsigned grid[3], const unsigned block[3],
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
  /* More threads than the kernel's registers allow: the driver's CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES. */
  if ((unsigned long long)block[0] * block[1] * block[2] > (unsigned long long)l->function->max_threads) {
    ++g_errors;
    return 701;
  }
  for (int k = 0; k < l->arity; ++k) l->args[k] = *(unsigned long long*)params[k]; /* copied, as the driver does */
  return OK;
}
CUresult cuLaunchKernel(void* function, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                        unsigned bz, unsigned shared, void* stream, void** params, void** extra) {
  NEED_STREAM(stream);
  const unsigned grid[3] = {gx, gy, gz}, block[3] = {bx, by, bz};
  mock_launch l;
  const CUresult r = describe_launch(&l, function, grid, block, shared, params, extra);
  if (r != OK) return r;
  perform(&l);
  ++g_launches;
  return OK;
}
CUresult cuEventCreate(void** event, unsigned flags) {
  NEED_CONTEXT();
  if (flags != 2 && flags != 0) { ++g_errors; return INVALID_VALUE; } /* CU_EVENT_DISABLE_TIMING, or timing */
  ++g_live_events;
  *event = &g_event;
  return OK;
}
CUresult cuEventDestroy_v2(void* event) { NEED_CONTEXT(); if (event != &g_event) return bad(); --g_live_events; return OK; }
/* mock_fail_event_record(n): the n-th cuEventRecord from now fails, as a real driver's may
 * (a context a kernel fault left unusable), for the callers' error paths. */
static int g_fail_record_in;
void mock_fail_event_record(int nth) { g_fail_record_in = nth; }
CUresult cuEventRecord(void* event, void* stream) {
  NEED_STREAM(stream);
  if (event != &g_event) return bad();
  if (g_fail_record_in > 0 && --g_fail_record_in == 0) return 999; /* CUDA_ERROR_UNKNOWN */
  return OK;
}
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
  if (g_peer_access == 2) return 711; /* CUDA_ERROR_TOO_MANY_PEERS: a path, but no mapping left */
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

/* ---- graphs ---- */
static int g_graph_instantiations, g_graph_launches, g_graph_updates, g_live_graphs;
static int g_fail_instantiate, g_fail_updates;
int mock_graph_instantiations(void) { return g_graph_instantiations; }
int mock_graph_launches(void) { return g_graph_launches; }
int mock_graph_updates(void) { return g_graph_updates; }
int mock_live_graphs(void) { return g_live_graphs; }
void mock_fail_graph_instantiate(int fail) { g_fail_instantiate = fail; }
void mock_fail_graph_updates(int fail) { g_fail_updates = fail; }

#ifndef MOCK_WITHOUT_GRAPHS
#define GRAPHS 16
#define NODES 512
typedef struct { int kind; /* 1 kernel, 2 memset */ mock_launch launch; CUdeviceptr dst; size_t bytes; } mock_node;
typedef struct { int live; int count; mock_node nodes[NODES]; } mock_graph;
typedef struct { int live; mock_graph* graph; int count; mock_node nodes[NODES]; } mock_exec;
static mock_graph g_graphs[GRAPHS];
static mock_exec g_execs[GRAPHS];

/* CUDA_KERNEL_NODE_PARAMS (_v2) and CUDA_MEMSET_NODE_PARAMS as cuda.h lays them out. */
typedef struct {
  void* func; unsigned gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes;
  void** kernelParams; void** extra; void* kern; void* ctx;
} kernel_node_params;
typedef struct { CUdeviceptr dst; size_t pitch; unsigned value, elementSize; size_t width, height; } memset_node_params;

static mock_graph* live_graph(void* graph) {
  mock_graph* g = graph;
  return g >= g_graphs && g < g_graphs + GRAPHS && g->live ? g : NULL;
}
static mock_exec* live_exec(void* exec) {
  mock_exec* e = exec;
  return e >= g_execs && e < g_execs + GRAPHS && e->live ? e : NULL;
}
/* The next node of `g`, after checking that it depends on exactly the node added before it: cannl
 * builds one chain, the order its stream would give. */
static mock_node* add_node(mock_graph* g, void* const* dependencies, size_t count) {
  if (g->count == NODES) return NULL;
  if (g->count == 0 ? count != 0 : count != 1 || dependencies[0] != &g->nodes[g->count - 1]) return NULL;
  return &g->nodes[g->count++];
}

CUresult cuGraphCreate(void** graph, unsigned flags) {
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
CUresult cuGraphDestroy(void* graph) {
  mock_graph* g = live_graph(graph);
  if (g == NULL) return bad();
  g->live = 0;
  --g_live_graphs;
  return OK;
}
CUresult cuGraphAddKernelNode_v2(void** node, void* graph, void* const* dependencies, size_t count,
                                 const kernel_node_params* p) {
  NEED_CONTEXT();
  mock_graph* g = live_graph(graph);
  if (g == NULL) return bad();
  const unsigned grid[3] = {p->gridDimX, p->gridDimY, p->gridDimZ}, block[3] = {p->blockDimX, p->blockDimY, p->blockDimZ};
  mock_launch l;
  const CUresult r = describe_launch(&l, p->func, grid, block, p->sharedMemBytes, p->kernelParams, p->extra);
  if (r != OK) return r;
  mock_node* n = add_node(g, dependencies, count);
  if (n == NULL) return bad();
  n->kind = 1;
  n->launch = l;
  *node = n;
  return OK;
}
CUresult cuGraphAddMemsetNode(void** node, void* graph, void* const* dependencies, size_t count,
                              const memset_node_params* p, void* context) {
  NEED_CONTEXT();
  mock_graph* g = live_graph(graph);
  if (g == NULL || context != &g_context[current_device()]) return bad();
  if (p->value != 0 || p->elementSize != 1 || p->height != 1 || p->width == 0 || p->dst == 0) return bad();
  mock_node* n = add_node(g, dependencies, count);
  if (n == NULL) return bad();
  n->kind = 2;
  n->dst = p->dst;
  n->bytes = p->width;
  *node = n;
  return OK;
}
CUresult cuGraphInstantiateWithFlags(void** exec, void* graph, unsigned long long flags) {
  NEED_CONTEXT();
  mock_graph* g = live_graph(graph);
  if (g == NULL || flags != 0) return bad();
  if (g_fail_instantiate) return 999; /* CUDA_ERROR_UNKNOWN */
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
CUresult cuGraphExecDestroy(void* exec) {
  mock_exec* e = live_exec(exec);
  if (e == NULL) return bad();
  e->live = 0;
  --g_live_graphs;
  return OK;
}
CUresult cuGraphExecKernelNodeSetParams_v2(void* exec, void* node, const kernel_node_params* p) {
  NEED_CONTEXT();
  mock_exec* e = live_exec(exec);
  /* The node is one of the graph it was instantiated from, which must still be alive. */
  if (e == NULL || live_graph(e->graph) == NULL) return bad();
  mock_node* n = node;
  if (n < e->graph->nodes || n >= e->graph->nodes + e->graph->count || n->kind != 1) return bad();
  mock_node* target = &e->nodes[n - e->graph->nodes];
  if (g_fail_updates) return 999;
  const unsigned grid[3] = {p->gridDimX, p->gridDimY, p->gridDimZ}, block[3] = {p->blockDimX, p->blockDimY, p->blockDimZ};
  mock_launch l;
  const CUresult r = describe_launch(&l, p->func, grid, block, p->sharedMemBytes, p->kernelParams, p->extra);
  if (r != OK) return r;
  if (l.function != target->launch.function) return bad(); /* an update may not change the kernel */
  target->launch = l;
  ++g_graph_updates;
  return OK;
}
CUresult cuGraphLaunch(void* exec, void* stream) {
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
