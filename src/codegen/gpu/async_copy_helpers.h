#pragma once
// The asynchronous copies a pipelined tile's staging calls (TileBlocking::async_copy;
// GpuDialect::spells_async_copy), per dialect:
//  * CUDA (sm_80 and later): inline PTX, `cp.async.cg.shared.global` of 16 bytes and
//    `cp.async.ca.shared.global` of 4, each with a src-size operand (the bytes past it are
//    written as zeros: the tile's edges need no branch), `cp.async.commit_group` and
//    `cp.async.wait_group 0`;
//  * OpenCL: an emulation for tests on PoCL: each copy waits in the thread's queue (a private
//    `cannl_cp_queue` of the tile, an extra argument of the copies and the wait) until the
//    thread waits, and is done then, with the same zero fill; a read of a slice before the wait
//    and the barrier after it reads stale cells, and a 16-byte copy from or to an address that
//    is not 16-byte aligned writes NaN, so a test fails where the hardware would race or fault.
//
//   cannl_cp_async16(slice + 4 * q, a + offset, inside ? 16 : 0);   cannl_cp_async_commit();
//   cannl_cp_async_wait_all();   // then a barrier: every thread's copies are in the slice
//
//   std::vector<PreludeHelper> helpers; append_cuda_async_copy_helpers(helpers);

#include <vector>

#include "codegen/clike/prelude.h"

namespace cannl::codegen {

void append_cuda_async_copy_helpers(std::vector<PreludeHelper>& out);
void append_opencl_async_copy_emulation(std::vector<PreludeHelper>& out);

/// Copies one thread of the OpenCL emulation may have in flight (its queue's capacity).
inline constexpr int kOpenClAsyncQueue = 64;

}  // namespace cannl::codegen
