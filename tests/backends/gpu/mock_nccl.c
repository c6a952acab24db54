/* A mock of NCCL for the tests of cannl's NCCL all-reduce on the mock CUDA driver
 * (mock_cuda_driver.c), whose device memory is host memory: the reduction runs here, on the host,
 * at the end of the group, members in rank order. It logs every call ("AllReduce(rank=1,count=6,
 * type=7,op=4,inplace)") for the test to compare with the expected sequence, and counts what
 * would fail or hang on a real NCCL: a collective of several local ranks outside a group, members
 * disagreeing on count, type or op, an id that is not the one ncclGetUniqueId made, a null stream.
 * The test compiles it with the system C compiler and loads it as libnccl. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int ncclResult_t;
typedef struct { char internal[128]; } ncclUniqueId;
enum { SUCCESS = 0, INVALID_ARGUMENT = 4, INVALID_USAGE = 5 };
enum { FLOAT32 = 7, FLOAT64 = 8 };
enum { SUM = 0, AVG = 4 };

typedef struct Comm { int clique, rank, ranks, alive; } Comm;
typedef struct Op { Comm* comm; const void* send; void* receive; size_t count; int type, op; } Op;

#define MAX_OPS 4096
static Op g_ops[MAX_OPS];
static int g_queued, g_group_depth, g_errors, g_cliques, g_live_comms, g_fail_next;
static int g_made_id, g_async_error, g_version = 22105;
static ncclUniqueId g_id;
static char g_log[1 << 16];

static void note(const char* line) {
  const size_t used = strlen(g_log);
  snprintf(g_log + used, sizeof g_log - used, "%s%s", used ? ";" : "", line);
}

/* For the test. */
const char* mock_nccl_log(void) { return g_log; }
void mock_nccl_clear_log(void) { g_log[0] = 0; }
int mock_nccl_errors(void) { return g_errors; }
int mock_nccl_live_comms(void) { return g_live_comms; }
void mock_nccl_fail_next(int result) { g_fail_next = result; }
void mock_nccl_set_async_error(int result) { g_async_error = result; }
void mock_nccl_set_version(int version) { g_version = version; }

ncclResult_t ncclGetVersion(int* version) { *version = g_version; return SUCCESS; }
const char* ncclGetErrorString(ncclResult_t result) {
  switch (result) {
    case INVALID_ARGUMENT: return "mock: invalid argument";
    case INVALID_USAGE: return "mock: invalid usage";
    case 6: return "mock: remote process exited or there was a network error";
    default: return "mock: error";
  }
}
ncclResult_t ncclGetUniqueId(ncclUniqueId* id) {
  for (int i = 0; i < 128; ++i) g_id.internal[i] = (char)(i * 7 + 3);
  g_made_id = 1;
  *id = g_id;
  note("GetUniqueId");
  return SUCCESS;
}
static Comm* new_comm(int clique, int rank, int ranks) {
  Comm* comm = malloc(sizeof(Comm));
  comm->clique = clique;
  comm->rank = rank;
  comm->ranks = ranks;
  comm->alive = 1;
  ++g_live_comms;
  return comm;
}
ncclResult_t ncclCommInitAll(Comm** comms, int devices, const int* list) {
  char line[256];
  int at = snprintf(line, sizeof line, "CommInitAll(n=%d,devices=", devices);
  for (int d = 0; d < devices; ++d) {
    for (int e = 0; e < d; ++e)
      if (list[e] == list[d]) { ++g_errors; return INVALID_USAGE; }
    at += snprintf(line + at, sizeof line - (size_t)at, "%s%d", d ? "," : "", list[d]);
  }
  snprintf(line + at, sizeof line - (size_t)at, ")");
  note(line);
  const int clique = ++g_cliques;
  for (int d = 0; d < devices; ++d) comms[d] = new_comm(clique, d, devices);
  return SUCCESS;
}
ncclResult_t ncclCommInitRank(Comm** comm, int ranks, ncclUniqueId id, int rank) {
  char line[96];
  snprintf(line, sizeof line, "CommInitRank(ranks=%d,rank=%d)", ranks, rank);
  note(line);
  if (ranks > 1 && g_group_depth == 0) ++g_errors; /* it would wait for the other ranks */
  if (g_made_id && memcmp(&id, &g_id, sizeof id) != 0) { ++g_errors; return INVALID_ARGUMENT; }
  if (rank < 0 || rank >= ranks) { ++g_errors; return INVALID_ARGUMENT; }
  *comm = new_comm(1000, rank, ranks);
  return SUCCESS;
}
ncclResult_t ncclCommDestroy(Comm* comm) {
  if (comm == NULL || !comm->alive) { ++g_errors; return INVALID_ARGUMENT; }
  comm->alive = 0;
  --g_live_comms;
  free(comm);
  return SUCCESS;
}
ncclResult_t ncclCommAbort(Comm* comm) {
  char line[48];
  snprintf(line, sizeof line, "CommAbort(rank=%d)", comm ? comm->rank : -1);
  note(line);
  return ncclCommDestroy(comm);
}
ncclResult_t ncclCommGetAsyncError(Comm* comm, ncclResult_t* error) {
  if (comm == NULL || !comm->alive) { ++g_errors; return INVALID_ARGUMENT; }
  *error = g_async_error;
  return SUCCESS;
}

/* The k-th queued operation of `rank` in `clique`, or -1. */
static int find_op(int clique, int rank, int k) {
  for (int i = 0; i < g_queued; ++i)
    if (g_ops[i].comm->clique == clique && g_ops[i].comm->rank == rank && k-- == 0) return i;
  return -1;
}
/* Runs every queued collective whose members are all here; the rest is an error (a real NCCL
 * would wait for members that never come). */
static void run_queued(void) {
  for (int i = 0; i < g_queued; ++i) {
    Op* first = &g_ops[i];
    if (first->comm == NULL || first->comm->rank != 0) continue;
    int k = 0;
    for (int j = 0; j < i; ++j)
      if (g_ops[j].comm && g_ops[j].comm->clique == first->comm->clique && g_ops[j].comm->rank == 0) ++k;
    const int ranks = first->comm->ranks;
    int members[64];
    for (int r = 0; r < ranks; ++r) {
      members[r] = find_op(first->comm->clique, r, k);
      if (members[r] < 0) { ++g_errors; return; }
      const Op* m = &g_ops[members[r]];
      if (m->count != first->count || m->type != first->type || m->op != first->op) { ++g_errors; return; }
    }
    for (size_t e = 0; e < first->count; ++e) {
      if (first->type == FLOAT32) {
        const float scale = first->op == AVG ? (float)(1.0 / ranks) : 1.0f;
        float acc = 0;
        for (int r = 0; r < ranks; ++r) acc += ((const float*)g_ops[members[r]].send)[e] * scale;
        for (int r = 0; r < ranks; ++r) ((float*)g_ops[members[r]].receive)[e] = acc;
      } else {
        const double scale = first->op == AVG ? 1.0 / ranks : 1.0;
        double acc = 0;
        for (int r = 0; r < ranks; ++r) acc += ((const double*)g_ops[members[r]].send)[e] * scale;
        for (int r = 0; r < ranks; ++r) ((double*)g_ops[members[r]].receive)[e] = acc;
      }
    }
  }
  g_queued = 0;
}
ncclResult_t ncclGroupStart(void) { ++g_group_depth; note("GroupStart"); return SUCCESS; }
ncclResult_t ncclGroupEnd(void) {
  if (g_group_depth == 0) { ++g_errors; return INVALID_USAGE; }
  note("GroupEnd");
  if (--g_group_depth == 0) run_queued();
  return SUCCESS;
}
ncclResult_t ncclAllReduce(const void* send, void* receive, size_t count, int type, int op, Comm* comm, void* stream) {
  char line[128];
  snprintf(line, sizeof line, "AllReduce(rank=%d,count=%zu,type=%d,op=%d%s)", comm ? comm->rank : -1, count, type, op,
           send == receive ? ",inplace" : "");
  note(line);
  if (g_fail_next) { const int result = g_fail_next; g_fail_next = 0; return result; }
  if (comm == NULL || !comm->alive || stream == NULL || (type != FLOAT32 && type != FLOAT64) || (op != SUM && op != AVG)) {
    ++g_errors;
    return INVALID_ARGUMENT;
  }
  if (g_group_depth == 0 && comm->ranks > 1) ++g_errors; /* it would wait for the other ranks */
  if (g_queued == MAX_OPS) { ++g_errors; return INVALID_USAGE; }
  g_ops[g_queued++] = (Op){comm, send, receive, count, type, op};
  if (g_group_depth == 0) run_queued();
  return SUCCESS;
}
