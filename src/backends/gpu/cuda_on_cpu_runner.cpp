// The block scheduler of the cuda-cpu device (cuda_on_cpu_runner.h): ucontext fibers, one per
// thread of the block, switched only where a thread waits, and the warp operations computed at
// the moment the last lane of their mask arrives.
#include "backends/gpu/cuda_on_cpu_runner.h"

#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <vector>

#include "cannl/support/error.h"
#include "cannl/support/float_codecs.h"

#if defined(__SANITIZE_ADDRESS__)
#define CANNL_FIBERS_UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define CANNL_FIBERS_UNDER_ASAN 1
#endif
#endif
#ifdef CANNL_FIBERS_UNDER_ASAN
#include <sanitizer/common_interface_defs.h>
#endif

namespace cannl::backends::gpu {

namespace {

constexpr int kWarp = 32;

// What a thread waits at (None: it can run).
enum class Wait { None, Barrier, Shuffle, Mma, Ldmatrix, Done };

bool warp_operation(Wait w) { return w == Wait::Shuffle || w == Wait::Mma || w == Wait::Ldmatrix; }

const char* operation_name(Wait w) {
  switch (w) {
    case Wait::Barrier: return "__syncthreads";
    case Wait::Shuffle: return "__shfl_down_sync";
    case Wait::Mma: return "mma.sync";
    case Wait::Ldmatrix: return "ldmatrix";
    default: return "nothing";
  }
}

struct PendingCopy {
  void* dst;
  const void* src;
  int bytes, src_bytes;
};

struct Fiber {
  ucontext_t context{};
  char* stack = nullptr;  // usable part, above the guard page
  cannl_cpu_thread self{};
  Wait wait = Wait::None;
  int site = 0;
  // The operands of the warp operation it waits at.
  unsigned mask = 0;
  unsigned long long bits = 0, result = 0;
  unsigned delta = 0;
  int format = 0, trans = 0;
  float* c = nullptr;
  const unsigned* a = nullptr;
  const unsigned* b = nullptr;
  unsigned* r = nullptr;
  const unsigned short* row = nullptr;
  std::vector<PendingCopy> copies;
#ifdef CANNL_FIBERS_UNDER_ASAN
  void* fake_stack = nullptr;
#endif
};

std::string dim3(const cannl_cpu_dim3& d) {
  return "(" + std::to_string(d.x) + ", " + std::to_string(d.y) + ", " + std::to_string(d.z) + ")";
}

std::string thread_name(const Fiber& f) { return "thread " + dim3(f.self.thread); }

std::string state_of(const Fiber& f) {
  if (f.wait == Wait::Done) return "has returned";
  return std::string("waits at ") + operation_name(f.wait) + " (line " + std::to_string(f.site) + ")";
}

// ---- the warp operations' arithmetic, as the PTX ISA states the fragments (groupID = lane / 4,
// threadID_in_group = lane % 4) ----

float mma_input(unsigned bits, int format) {
  if (format == 0) return bf16_to_f32(static_cast<std::uint16_t>(bits));
  if (format == 1) return f16_to_f32(static_cast<std::uint16_t>(bits));
  float f;
  bits &= ~0x1fffu;  // tf32: the unit reads 10 mantissa bits; the low 13 are ignored
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

// Every lane's accumulators of one mma.sync, from the 32 lanes' fragments.
void warp_mma(const std::array<Fiber*, kWarp>& lanes, int format) {
  const int k = format == 2 ? 8 : 16;
  float a[16][16] = {}, b[16][8] = {};
  for (int l = 0; l < kWarp; ++l) {
    const Fiber& f = *lanes[static_cast<std::size_t>(l)];
    const int g = l / 4, t = l % 4;
    if (format == 2) {
      a[g][t] = mma_input(f.a[0], 2);
      a[g + 8][t] = mma_input(f.a[1], 2);
      a[g][t + 4] = mma_input(f.a[2], 2);
      a[g + 8][t + 4] = mma_input(f.a[3], 2);
      b[t][g] = mma_input(f.b[0], 2);
      b[t + 4][g] = mma_input(f.b[1], 2);
      continue;
    }
    for (int reg = 0; reg < 4; ++reg) {
      for (int h = 0; h < 2; ++h) {
        const unsigned bits = (f.a[reg] >> (16 * h)) & 0xffffu;
        a[g + (reg % 2 == 1 ? 8 : 0)][2 * t + h + (reg >= 2 ? 8 : 0)] = mma_input(bits, format);
      }
    }
    for (int reg = 0; reg < 2; ++reg)
      for (int h = 0; h < 2; ++h) b[2 * t + h + 8 * reg][g] = mma_input((f.b[reg] >> (16 * h)) & 0xffffu, format);
  }
  for (int l = 0; l < kWarp; ++l) {
    Fiber& f = *lanes[static_cast<std::size_t>(l)];
    const int g = l / 4, t = l % 4;
    for (int e = 0; e < 4; ++e) {
      const int row = g + (e >= 2 ? 8 : 0), col = 2 * t + e % 2;
      // The order of the tests' emulation (codegen/gpu/mma_helpers.cpp): the accumulator, then
      // the products in step order, each rounded.
      float s = f.c[e];
      for (int q = 0; q < k; ++q) s = s + a[row][q] * b[q][col];
      f.c[e] = s;
    }
  }
}

// Every lane's four registers of one ldmatrix .x4: lane l names row l % 8 of matrix l / 8.
void warp_ldmatrix(const std::array<Fiber*, kWarp>& lanes, int trans) {
  for (int l = 0; l < kWarp; ++l) {
    Fiber& f = *lanes[static_cast<std::size_t>(l)];
    for (int reg = 0; reg < 4; ++reg) {
      unsigned v = 0;
      for (int h = 0; h < 2; ++h) {
        const int row = trans ? 2 * (l % 4) + h : l / 4, col = trans ? l / 4 : 2 * (l % 4) + h;
        v |= static_cast<unsigned>(lanes[static_cast<std::size_t>(8 * reg + row)]->row[col]) << (16 * h);
      }
      f.r[reg] = v;
    }
  }
}

// ---- the scheduler ----

class Block;
thread_local Block* tl_block = nullptr;

void fiber_main();

class Block {
 public:
  Block(std::vector<Fiber>& fibers, const CpuKernel& kernel, void** args) : fibers_(fibers), kernel_(kernel), args_(args) {}

  // Runs the block's `count` threads (fibers_[0, count)) to completion; throws on what the
  // header lists.
  void run(std::size_t count, CpuThreadOrder order) {
    count_ = count;
    for (std::size_t i = 0; i < count; ++i) {
      Fiber& f = fibers_[i];
      f.wait = Wait::None;
      f.copies.clear();
      getcontext(&f.context);
      f.context.uc_stack.ss_sp = f.stack;
      f.context.uc_stack.ss_size = stack_bytes_;
      f.context.uc_link = nullptr;
      makecontext(&f.context, fiber_main, 0);
    }
    Block* const outer = tl_block;
    tl_block = this;
    try {
      schedule(order);
    } catch (...) {
      tl_block = outer;
      throw;
    }
    tl_block = outer;
  }

  void set_stack_bytes(std::size_t bytes) { stack_bytes_ = bytes; }
  const std::string& kernel_name() const { return kernel_.name; }
  Fiber& running() { return *running_; }

  // The running thread's body, on its own stack.
  void body() {
#ifdef CANNL_FIBERS_UNDER_ASAN
    __sanitizer_finish_switch_fiber(nullptr, &scheduler_stack_, &scheduler_stack_size_);
#endif
    kernel_.entry(args_);
    running_->wait = Wait::Done;
    switch_to_scheduler(true);
  }

  // Called on the running thread: it waits (its `wait` set) until the scheduler resumes it.
  void yield() { switch_to_scheduler(false); }

  // Called on the running thread: the launch fails with `message` once it is back at the
  // scheduler; the thread never resumes.
  [[noreturn]] void fail(const std::string& message) {
    failure_ = message;
    running_->wait = Wait::Done;
    switch_to_scheduler(true);
    std::abort();  // not reached: a failed thread is never resumed
  }

 private:
  void switch_to_scheduler(bool final_switch) {
    Fiber& f = *running_;
#ifdef CANNL_FIBERS_UNDER_ASAN
    __sanitizer_start_switch_fiber(final_switch ? nullptr : &f.fake_stack, scheduler_stack_, scheduler_stack_size_);
#else
    (void)final_switch;
#endif
    swapcontext(&f.context, &scheduler_);
#ifdef CANNL_FIBERS_UNDER_ASAN
    __sanitizer_finish_switch_fiber(f.fake_stack, nullptr, nullptr);
#endif
  }

  void resume(Fiber& f) {
    running_ = &f;
    *kernel_.self_slot = &f.self;
#ifdef CANNL_FIBERS_UNDER_ASAN
    void* fake = nullptr;
    __sanitizer_start_switch_fiber(&fake, f.stack, stack_bytes_);
#endif
    swapcontext(&scheduler_, &f.context);
#ifdef CANNL_FIBERS_UNDER_ASAN
    __sanitizer_finish_switch_fiber(fake, nullptr, nullptr);
#endif
    running_ = nullptr;
    if (!failure_.empty()) throw_failure(failure_);
  }

  void schedule(CpuThreadOrder order) {
    for (;;) {
      for (std::size_t k = 0; k < count_; ++k) {
        Fiber& f = fibers_[order == CpuThreadOrder::Forward ? k : count_ - 1 - k];
        if (f.wait == Wait::None) resume(f);
      }
      if (std::all_of(fibers_.begin(), fibers_.begin() + static_cast<std::ptrdiff_t>(count_),
                      [](const Fiber& f) { return f.wait == Wait::Done; }))
        return;
      if (release_warps() || release_barrier()) continue;
      throw_failure("no thread can go on: " + states());
    }
  }

  [[noreturn]] void throw_failure(const std::string& what) const {
    throw RuntimeError("cuda-cpu: kernel " + kernel_.name + ", block " + dim3(fibers_[0].self.block) + ": " + what);
  }

  std::string states() const {
    std::string out;
    for (std::size_t i = 0; i < count_ && i < 8; ++i) out += (i ? "; " : "") + thread_name(fibers_[i]) + " " + state_of(fibers_[i]);
    if (count_ > 8) out += "; ...";
    return out;
  }

  // Completes every warp operation all of whose lanes wait at it; throws where a lane it names
  // cannot arrive. Whether one completed.
  bool release_warps() {
    bool released = false;
    for (std::size_t first = 0; first < count_; first += kWarp) {
      const std::size_t lanes = std::min<std::size_t>(kWarp, count_ - first);
      for (std::size_t l = 0; l < lanes; ++l) {
        Fiber& lead = fibers_[first + l];
        if (warp_operation(lead.wait)) {
          complete(lead, first, lanes);
          released = true;
        }
      }
    }
    return released;
  }

  void complete(const Fiber& lead, std::size_t first, std::size_t lanes) {
    const Wait op = lead.wait;
    const unsigned mask = op == Wait::Shuffle ? lead.mask : 0xffffffffu;
    const std::string what = std::string(operation_name(op)) + " (line " + std::to_string(lead.site) + ")";
    const std::size_t own_lane = static_cast<std::size_t>(&lead - &fibers_[first]);
    if (((mask >> own_lane) & 1u) == 0)
      throw_failure(thread_name(lead) + " calls " + what + " with a mask that does not name its own lane");
    std::array<Fiber*, kWarp> members{};
    for (std::size_t l = 0; l < kWarp; ++l) {
      if (((mask >> l) & 1u) == 0) continue;
      if (l >= lanes)
        throw_failure(what + " names lane " + std::to_string(l) + " of the warp of " + thread_name(fibers_[first]) +
                      ", but the block has no thread there");
      Fiber& f = fibers_[first + l];
      if (f.wait != op || f.site != lead.site || (op == Wait::Shuffle && f.mask != mask))
        throw_failure(thread_name(lead) + " waits at " + what + " with lane " + std::to_string(l) + " (" +
                      thread_name(f) + "), which " + state_of(f) + ": a warp operation every lane of its mask must reach");
      members[l] = &f;
    }
    if (op == Wait::Shuffle) {
      for (std::size_t l = 0; l < kWarp; ++l) {
        if (members[l] == nullptr) continue;
        const std::size_t src = l + members[l]->delta;
        members[l]->result = src >= kWarp ? members[l]->bits
                             : members[src] != nullptr ? members[src]->bits
                                                       : 0xffc0deadffc0deadull;  // a lane outside the mask: undefined
      }
    } else if (op == Wait::Mma) {
      for (Fiber* f : members)
        if (f->format != lead.format) throw_failure(what + ": lanes of one warp ask for different formats");
      warp_mma(members, lead.format);
    } else {
      for (Fiber* f : members) {
        if (f->trans != lead.trans) throw_failure(what + ": lanes of one warp ask for different layouts");
        if (reinterpret_cast<std::uintptr_t>(f->row) % 16 != 0)
          throw_failure(what + ": " + thread_name(*f) + " names a row address that is not 16-byte aligned");
      }
      warp_ldmatrix(members, lead.trans);
    }
    for (Fiber* f : members)
      if (f != nullptr) f->wait = Wait::None;
  }

  // Releases the barrier once every thread waits at it; throws where some never will.
  bool release_barrier() {
    const Fiber* waiting = nullptr;
    for (std::size_t i = 0; i < count_ && waiting == nullptr; ++i)
      if (fibers_[i].wait == Wait::Barrier) waiting = &fibers_[i];
    if (waiting == nullptr) return false;
    for (std::size_t i = 0; i < count_; ++i) {
      const Fiber& f = fibers_[i];
      if (f.wait != Wait::Barrier || f.site != waiting->site)
        throw_failure(thread_name(*waiting) + " waits at __syncthreads (line " + std::to_string(waiting->site) + ") but " +
                      thread_name(f) + " " + state_of(f) + ": a barrier not every thread of the block reaches");
    }
    for (std::size_t i = 0; i < count_; ++i) fibers_[i].wait = Wait::None;
    return true;
  }

  std::vector<Fiber>& fibers_;
  const CpuKernel& kernel_;
  void** args_;
  std::size_t count_ = 0, stack_bytes_ = 0;
  ucontext_t scheduler_{};
  Fiber* running_ = nullptr;
  std::string failure_;
#ifdef CANNL_FIBERS_UNDER_ASAN
  const void* scheduler_stack_ = nullptr;
  std::size_t scheduler_stack_size_ = 0;
#endif
};

void fiber_main() { tl_block->body(); }

Fiber& running_fiber() {
  internal_check(tl_block != nullptr, "cuda-cpu: a device function called outside a launch");
  return tl_block->running();
}

// ---- the entry points a module calls ----

void rt_syncthreads(int site) {
  Fiber& f = running_fiber();
  f.wait = Wait::Barrier;
  f.site = site;
  tl_block->yield();
}

unsigned long long rt_shfl_down(unsigned mask, unsigned long long bits, unsigned delta, int site) {
  Fiber& f = running_fiber();
  f.wait = Wait::Shuffle;
  f.site = site;
  f.mask = mask;
  f.bits = bits;
  f.delta = delta;
  tl_block->yield();
  return f.result;
}

void rt_mma(int format, float* c, const unsigned* a, const unsigned* b, int site) {
  Fiber& f = running_fiber();
  if (format < 0 || format > 2) tl_block->fail("mma.sync of unknown format " + std::to_string(format));
  f.wait = Wait::Mma;
  f.site = site;
  f.format = format;
  f.c = c;
  f.a = a;
  f.b = b;
  tl_block->yield();
}

void rt_ldmatrix(int trans, unsigned* r, const unsigned short* row, int site) {
  Fiber& f = running_fiber();
  f.wait = Wait::Ldmatrix;
  f.site = site;
  f.trans = trans;
  f.r = r;
  f.row = row;
  tl_block->yield();
}

void rt_cp_async(void* dst, const void* src, int bytes, int src_bytes, int site) {
  Fiber& f = running_fiber();
  const bool aligned = (reinterpret_cast<std::uintptr_t>(dst) | reinterpret_cast<std::uintptr_t>(src)) % static_cast<unsigned>(bytes) == 0;
  if ((bytes != 4 && bytes != 16) || !aligned || src_bytes < 0 || src_bytes > bytes)
    tl_block->fail(thread_name(f) + ": cp.async (line " + std::to_string(site) + ") of " + std::to_string(bytes) +
                   " bytes, " + std::to_string(src_bytes) + " from the source, at addresses that are not " +
                   std::to_string(bytes) + "-byte aligned or with a source size past the copy");
  f.copies.push_back({dst, src, bytes, src_bytes});
}

void rt_cp_async_wait_all(int) {
  Fiber& f = running_fiber();
  for (const PendingCopy& c : f.copies) {
    std::memcpy(c.dst, c.src, static_cast<std::size_t>(c.src_bytes));
    std::memset(static_cast<char*>(c.dst) + c.src_bytes, 0, static_cast<std::size_t>(c.bytes - c.src_bytes));
  }
  f.copies.clear();
}

unsigned short rt_f16_bits(float x) { return f32_to_f16(x); }

const cannl_cpu_runtime kRuntime = {rt_syncthreads, rt_shfl_down, rt_mma, rt_ldmatrix, rt_cp_async, rt_cp_async_wait_all,
                                    rt_f16_bits};

std::size_t page_size() { return static_cast<std::size_t>(sysconf(_SC_PAGESIZE)); }

}  // namespace

struct CpuKernelRunner::Impl {
  std::size_t stack_bytes;
  std::vector<Fiber> fibers;
  std::vector<std::pair<void*, std::size_t>> mappings;

  ~Impl() {
    for (const auto& [address, bytes] : mappings) munmap(address, bytes);
  }

  // Stacks for `count` threads (kept for later launches).
  void reserve(std::size_t count) {
    while (fibers.size() < count) {
      const std::size_t guard = page_size(), bytes = stack_bytes + guard;
      void* base = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
      if (base == MAP_FAILED) throw ResourceError("cuda-cpu: cannot map a thread stack of " + std::to_string(bytes) + " bytes");
      mappings.emplace_back(base, bytes);
      mprotect(base, guard, PROT_NONE);
      fibers.emplace_back();
      fibers.back().stack = static_cast<char*>(base) + guard;
    }
  }
};

CpuKernelRunner::CpuKernelRunner(std::size_t stack_bytes) : impl_(std::make_unique<Impl>()) {
  const std::size_t page = page_size();
  impl_->stack_bytes = (stack_bytes + page - 1) / page * page;
}

CpuKernelRunner::~CpuKernelRunner() = default;

void CpuKernelRunner::run(const CpuKernel& kernel, const ir::KernelGeometry& geometry, void** args, CpuThreadOrder order) {
  const auto& g = geometry.grid;
  const auto& b = geometry.block;
  const std::size_t threads = static_cast<std::size_t>(b[0] * b[1] * b[2]);
  if (threads == 0 || g[0] * g[1] * g[2] == 0) return;
  impl_->reserve(threads);
  const auto u = [](std::int64_t v) { return static_cast<unsigned>(v); };
  for (std::size_t i = 0; i < threads; ++i) {
    Fiber& f = impl_->fibers[i];
    const std::int64_t t = static_cast<std::int64_t>(i);
    f.self.thread = {u(t % b[0]), u(t / b[0] % b[1]), u(t / (b[0] * b[1]))};
    f.self.block_dim = {u(b[0]), u(b[1]), u(b[2])};
    f.self.grid_dim = {u(g[0]), u(g[1]), u(g[2])};
  }
  Block block(impl_->fibers, kernel, args);
  block.set_stack_bytes(impl_->stack_bytes);
  const std::int64_t blocks = g[0] * g[1] * g[2];
  for (std::int64_t k = 0; k < blocks; ++k) {
    const std::int64_t id = order == CpuThreadOrder::Forward ? k : blocks - 1 - k;
    const cannl_cpu_dim3 here = {u(id % g[0]), u(id / g[0] % g[1]), u(id / (g[0] * g[1]))};
    for (std::size_t i = 0; i < threads; ++i) impl_->fibers[i].self.block = here;
    block.run(threads, order);
  }
}

const cannl_cpu_runtime& cpu_runtime() { return kRuntime; }

}  // namespace cannl::backends::gpu
