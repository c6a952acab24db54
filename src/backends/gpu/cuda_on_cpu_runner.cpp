// The block scheduler of the cuda-cpu device (cuda_on_cpu_runner.h): fibers that run the
// block's threads in turn and stay with a thread that waits, switched only there, and the warp
// operations computed once the last lane of their mask arrives.
#include "backends/gpu/cuda_on_cpu_runner.h"

#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <sstream>
#include <utility>
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
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif

// The x86-64 (ELF) switch of fiber stacks (see "execution contexts" below), at global scope:
// the assembler symbols have C names.
#if defined(__x86_64__) && defined(__ELF__)
#define CANNL_FIBERS_ASM_SWITCH 1
extern "C" void cannl_fiber_switch(void** save_sp, void* load_sp);
extern "C" void cannl_fiber_start();
extern "C" void cannl_fiber_entry();
asm(R"(
  .text
  .globl cannl_fiber_switch
  .hidden cannl_fiber_switch
  .type cannl_fiber_switch, @function
cannl_fiber_switch:
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  subq $8, %rsp
  stmxcsr (%rsp)
  fnstcw 4(%rsp)
  movq %rsp, (%rdi)
  movq %rsi, %rsp
  ldmxcsr (%rsp)
  fldcw 4(%rsp)
  addq $8, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
  .size cannl_fiber_switch, .-cannl_fiber_switch
  .globl cannl_fiber_start
  .hidden cannl_fiber_start
  .type cannl_fiber_start, @function
cannl_fiber_start:
  call cannl_fiber_entry@PLT
  ud2
  .size cannl_fiber_start, .-cannl_fiber_start
)");

#endif

namespace cannl::backends::gpu {

namespace {

constexpr int kWarp = 32;

// What a thread waits at (None: it runs, or can).
enum class Wait { NotStarted, None, Barrier, Shuffle, Mma, Ldmatrix, Done };

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

// ---- execution contexts: on x86-64 a switch of stack pointers that saves the callee-saved
// registers and the floating-point control words (a ucontext switch also saves the signal
// mask, a system call each time: most of a kernel's time where its threads meet at barriers);
// ucontext elsewhere ----

void fiber_main();

#ifdef CANNL_FIBERS_ASM_SWITCH
struct Context {
  void* sp = nullptr;
};

// `c` starts fiber_main on the stack [stack, stack + bytes) at its next switch: the frame
// cannl_fiber_switch pops (control words, six registers, the return address), with the stack
// 16-byte aligned at cannl_fiber_start's call. The control words are the defaults (round to
// nearest, no flush to zero: NVRTC's --ftz=false), whatever the launching thread set.
void prepare(Context& c, char* stack, std::size_t bytes) {
  auto top = reinterpret_cast<std::uintptr_t>(stack + bytes) & ~std::uintptr_t{15};
  top -= 16;
  auto* frame = reinterpret_cast<std::uint64_t*>(top - 64);
  frame[0] = 0x1f80u | (std::uint64_t{0x037fu} << 32);
  for (int r = 1; r <= 6; ++r) frame[r] = 0;
  frame[7] = reinterpret_cast<std::uint64_t>(&cannl_fiber_start);
  c.sp = frame;
}

void switch_context(Context& from, Context& to) { cannl_fiber_switch(&from.sp, to.sp); }
#else
struct Context {
  ucontext_t uc{};
};

void prepare(Context& c, char* stack, std::size_t bytes) {
  getcontext(&c.uc);
  c.uc.uc_stack.ss_sp = stack;
  c.uc.uc_stack.ss_size = bytes;
  c.uc.uc_link = nullptr;
  makecontext(&c.uc, fiber_main, 0);
}

void switch_context(Context& from, Context& to) { swapcontext(&from.uc, &to.uc); }
#endif

// One CUDA thread of the running block.
struct Thread {
  cannl_cpu_thread self{};
  Wait wait = Wait::NotStarted;
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
  struct Fiber* fiber = nullptr;  // the fiber it runs on, once started and until done
};

// A stack and a context. A fiber runs threads one after another until one of them waits: it
// then stays with that thread, and the next thread starts on another fiber. A block whose
// threads never wait runs on one fiber.
struct Fiber {
  Context context;
  char* stack = nullptr;  // usable part, above the guard page
#ifdef CANNL_FIBERS_UNDER_ASAN
  void* fake_stack = nullptr;
#endif
};

std::string dim3(const cannl_cpu_dim3& d) {
  return "(" + std::to_string(d.x) + ", " + std::to_string(d.y) + ", " + std::to_string(d.z) + ")";
}

std::string thread_name(const Thread& f) { return "thread " + dim3(f.self.thread); }

std::string state_of(const Thread& f) {
  if (f.wait == Wait::Done) return "has returned";
  if (f.wait == Wait::NotStarted) return "has not started";
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
void warp_mma(const std::array<Thread*, kWarp>& lanes, int format) {
  const int k = format == 2 ? 8 : 16;
  float a[16][16] = {}, b[16][8] = {};
  for (int l = 0; l < kWarp; ++l) {
    const Thread& f = *lanes[static_cast<std::size_t>(l)];
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
    Thread& f = *lanes[static_cast<std::size_t>(l)];
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
void warp_ldmatrix(const std::array<Thread*, kWarp>& lanes, int trans) {
  for (int l = 0; l < kWarp; ++l) {
    Thread& f = *lanes[static_cast<std::size_t>(l)];
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

class Block {
 public:
  Block(std::vector<Thread>& threads, std::vector<Fiber>& fibers, std::size_t stack_bytes, const CpuKernel& kernel,
        void** args)
      : threads_(threads), fibers_(fibers), stack_bytes_(stack_bytes), kernel_(kernel), args_(args) {}

  // Runs the block's `count` threads (threads_[0, count), their indices set) to completion;
  // throws on what the header lists.
  void run(std::size_t count, CpuThreadOrder order) {
    count_ = count;
    order_ = order;
    next_ = 0;
    failure_.clear();
    free_.clear();
    for (std::size_t i = 0; i < count; ++i) {
      threads_[i].wait = Wait::NotStarted;
      threads_[i].fiber = nullptr;
      threads_[i].copies.clear();
      free_.push_back(&fibers_[count - 1 - i]);
    }
    if (kernel_.shared_begin != nullptr)
      std::memset(kernel_.shared_begin, 0xff, static_cast<std::size_t>(kernel_.shared_end - kernel_.shared_begin));
    struct Current {  // this block is the thread's running one for the call, thrown or not
      Block* outer;
      explicit Current(Block* b) : outer(std::exchange(tl_block, b)) {}
      ~Current() { tl_block = outer; }
    } current(this);
    schedule();
  }

  Thread& running() { return *running_; }
  // In reverse order a cp.async lands at once (the earliest legal moment); in forward order when
  // its thread waits (the latest): a read that depends on either shows in one of the runs.
  bool copies_land_at_issue() const { return order_ == CpuThreadOrder::Reverse; }

  // A fiber's life, on its own stack: the threads not yet started, in order, each to its end
  // (waiting where it must), then back to the scheduler for good.
  void fiber_body() {
#ifdef CANNL_FIBERS_UNDER_ASAN
    __sanitizer_finish_switch_fiber(nullptr, &scheduler_stack_, &scheduler_stack_size_);
#endif
    Fiber* const fiber = current_;
    while (Thread* t = claim()) {
      t->fiber = fiber;
      t->wait = Wait::None;
      running_ = t;
      *kernel_.self_slot = &t->self;
      kernel_.entry(args_);
      if (!t->copies.empty()) {
        record_failure(thread_name(*t) + " returned with " + std::to_string(t->copies.size()) +
                       " cp.async copies it never waited for");
        abandon();
      }
      t->wait = Wait::Done;
      t->fiber = nullptr;
    }
    free_.push_back(fiber);
    switch_to_scheduler(true);
  }

  // Called on the running thread: it waits at `op` (line `site`; its operands set) until the
  // scheduler resumes it.
  void wait_at(Wait op, int site) {
    running_->wait = op;
    running_->site = site;
    switch_to_scheduler(false);
  }

  // Called on the running thread: the launch fails with `message` once it is back at the
  // scheduler. The thread never resumes, so nothing of its frames is destroyed: the caller
  // builds the message in a statement of its own and hands it over here.
  void record_failure(std::string message) { failure_ = std::move(message); }
  [[noreturn]] void abandon() {
    running_->wait = Wait::Done;
    switch_to_scheduler(true);
    std::abort();  // not reached: a failed thread is never resumed
  }

 private:
  // The k-th thread in the run's order.
  Thread& in_order(std::size_t k) { return threads_[order_ == CpuThreadOrder::Forward ? k : count_ - 1 - k]; }

  // The next thread not yet started, or nullptr.
  Thread* claim() {
    while (next_ < count_ && in_order(next_).wait != Wait::NotStarted) ++next_;
    return next_ < count_ ? &in_order(next_++) : nullptr;
  }

  void switch_to_scheduler(bool final_switch) {
    Fiber& f = *current_;
#ifdef CANNL_FIBERS_UNDER_ASAN
    __sanitizer_start_switch_fiber(final_switch ? nullptr : &f.fake_stack, scheduler_stack_, scheduler_stack_size_);
#else
    (void)final_switch;
#endif
    switch_context(f.context, scheduler_);
#ifdef CANNL_FIBERS_UNDER_ASAN
    __sanitizer_finish_switch_fiber(f.fake_stack, nullptr, nullptr);
#endif
  }

  // Switches to `f` until it waits or ends.
  void enter(Fiber& f) {
    current_ = &f;
#ifdef CANNL_FIBERS_UNDER_ASAN
    void* fake = nullptr;
    __sanitizer_start_switch_fiber(&fake, f.stack, stack_bytes_);
#endif
    switch_context(scheduler_, f.context);
#ifdef CANNL_FIBERS_UNDER_ASAN
    __sanitizer_finish_switch_fiber(fake, nullptr, nullptr);
#endif
    current_ = nullptr;
    running_ = nullptr;
    if (!failure_.empty()) throw_failure(failure_);
  }

  // A fresh fiber for the threads not yet started.
  void start_fiber() {
    internal_check(!free_.empty(), "cuda-cpu: more fibers than threads");
    Fiber& f = *free_.back();
    free_.pop_back();
#ifdef CANNL_FIBERS_UNDER_ASAN
    // A fiber abandoned by a failed launch left its frames' redzones poisoned.
    __asan_unpoison_memory_region(f.stack, stack_bytes_);
#endif
    prepare(f.context, f.stack, stack_bytes_);
    enter(f);
  }

  void resume(Thread& t) {
    running_ = &t;
    *kernel_.self_slot = &t.self;
    enter(*t.fiber);
  }

  void schedule() {
    for (;;) {
      for (std::size_t k = 0; k < count_; ++k) {
        Thread& t = in_order(k);
        if (t.wait == Wait::None) resume(t);
        else if (t.wait == Wait::NotStarted) start_fiber();
      }
      if (std::all_of(threads_.begin(), threads_.begin() + static_cast<std::ptrdiff_t>(count_),
                      [](const Thread& t) { return t.wait == Wait::Done; }))
        return;
      if (release_warps() || release_barrier()) continue;
      throw_failure("no thread can go on: " + states());
    }
  }

  [[noreturn]] void throw_failure(const std::string& what) const {
    throw RuntimeError("cuda-cpu: kernel " + kernel_.name + ", block " + dim3(threads_[0].self.block) + ": " + what);
  }

  // Thread 0's state, then each thread whose state differs from the one before it (at most 16).
  std::string states() const {
    std::string out = thread_name(threads_[0]) + " " + state_of(threads_[0]);
    int listed = 1;
    for (std::size_t i = 1; i < count_ && listed < 16; ++i) {
      if (state_of(threads_[i]) == state_of(threads_[i - 1])) continue;
      out += "; " + thread_name(threads_[i]) + " " + state_of(threads_[i]);
      ++listed;
    }
    return out;
  }

  // Completes every warp operation all of whose lanes wait at it; throws where a lane it names
  // cannot arrive. Whether one completed.
  bool release_warps() {
    bool released = false;
    for (std::size_t first = 0; first < count_; first += kWarp) {
      const std::size_t lanes = std::min<std::size_t>(kWarp, count_ - first);
      for (std::size_t l = 0; l < lanes; ++l) {
        Thread& lead = threads_[first + l];
        if (warp_operation(lead.wait)) {
          complete(lead, first, lanes);
          released = true;
        }
      }
    }
    return released;
  }

  void complete(const Thread& lead, std::size_t first, std::size_t lanes) {
    const Wait op = lead.wait;
    const unsigned mask = op == Wait::Shuffle ? lead.mask : 0xffffffffu;
    const std::string what = std::string(operation_name(op)) + " (line " + std::to_string(lead.site) + ")";
    const std::size_t own_lane = static_cast<std::size_t>(&lead - &threads_[first]);
    if (((mask >> own_lane) & 1u) == 0)
      throw_failure(thread_name(lead) + " calls " + what + " with a mask that does not name its own lane");
    std::array<Thread*, kWarp> members{};
    for (std::size_t l = 0; l < kWarp; ++l) {
      if (((mask >> l) & 1u) == 0) continue;
      if (l >= lanes)
        throw_failure(what + " names lane " + std::to_string(l) + " of the warp of " + thread_name(threads_[first]) +
                      ", but the block has no thread there");
      Thread& f = threads_[first + l];
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
      for (Thread* f : members)
        if (f->format != lead.format) throw_failure(what + ": lanes of one warp ask for different formats");
      warp_mma(members, lead.format);
    } else {
      for (Thread* f : members) {
        if (f->trans != lead.trans) throw_failure(what + ": lanes of one warp ask for different layouts");
        if (reinterpret_cast<std::uintptr_t>(f->row) % 16 != 0)
          throw_failure(what + ": " + thread_name(*f) + " names a row address that is not 16-byte aligned");
      }
      warp_ldmatrix(members, lead.trans);
    }
    for (Thread* f : members)
      if (f != nullptr) f->wait = Wait::None;
  }

  // Releases the barrier once every thread waits at it; throws where some never will.
  bool release_barrier() {
    const Thread* waiting = nullptr;
    for (std::size_t i = 0; i < count_ && waiting == nullptr; ++i)
      if (threads_[i].wait == Wait::Barrier) waiting = &threads_[i];
    if (waiting == nullptr) return false;
    for (std::size_t i = 0; i < count_; ++i) {
      const Thread& f = threads_[i];
      if (f.wait != Wait::Barrier || f.site != waiting->site)
        throw_failure(thread_name(*waiting) + " waits at __syncthreads (line " + std::to_string(waiting->site) + ") but " +
                      thread_name(f) + " " + state_of(f) + ": a barrier not every thread of the block reaches");
    }
    for (std::size_t i = 0; i < count_; ++i) threads_[i].wait = Wait::None;
    return true;
  }

  std::vector<Thread>& threads_;
  std::vector<Fiber>& fibers_;
  std::vector<Fiber*> free_;
  std::size_t stack_bytes_;
  const CpuKernel& kernel_;
  void** args_;
  std::size_t count_ = 0, next_ = 0;
  CpuThreadOrder order_ = CpuThreadOrder::Forward;
  Context scheduler_;
  Thread* running_ = nullptr;
  Fiber* current_ = nullptr;
  std::string failure_;
#ifdef CANNL_FIBERS_UNDER_ASAN
  const void* scheduler_stack_ = nullptr;
  std::size_t scheduler_stack_size_ = 0;
#endif
};

void fiber_main() { tl_block->fiber_body(); }

// A module calls the entry points below only from the kernels a Block runs.
Thread& running_thread() { return tl_block->running(); }

// ---- the entry points a module calls ----

void rt_syncthreads(int site) { tl_block->wait_at(Wait::Barrier, site); }

unsigned long long rt_shfl_down(unsigned mask, unsigned long long bits, unsigned delta, int site) {
  Thread& f = running_thread();
  f.mask = mask;
  f.bits = bits;
  f.delta = delta;
  tl_block->wait_at(Wait::Shuffle, site);
  return f.result;
}

void rt_mma(int format, float* c, const unsigned* a, const unsigned* b, int site) {
  Thread& f = running_thread();
  if (format < 0 || format > 2) {
    tl_block->record_failure("mma.sync of unknown format " + std::to_string(format));
    tl_block->abandon();
  }
  f.format = format;
  f.c = c;
  f.a = a;
  f.b = b;
  tl_block->wait_at(Wait::Mma, site);
}

void rt_ldmatrix(int trans, unsigned* r, const unsigned short* row, int site) {
  Thread& f = running_thread();
  f.trans = trans;
  f.r = r;
  f.row = row;
  tl_block->wait_at(Wait::Ldmatrix, site);
}

// A copy's bytes, those past src_bytes zero; whole copies (most of a staged tile's) as one
// fixed-size move.
void land(const PendingCopy& c) {
  if (c.src_bytes == 16 && c.bytes == 16) {
    std::memcpy(c.dst, c.src, 16);
  } else if (c.src_bytes == 4 && c.bytes == 4) {
    std::memcpy(c.dst, c.src, 4);
  } else {
    char bytes[16] = {};
    std::memcpy(bytes, c.src, static_cast<std::size_t>(c.src_bytes));
    std::memcpy(c.dst, bytes, static_cast<std::size_t>(c.bytes));
  }
}

void rt_cp_async(void* dst, const void* src, int bytes, int src_bytes, int site) {
  Thread& f = running_thread();
  const bool sized = (bytes == 4 || bytes == 16) && src_bytes >= 0 && src_bytes <= bytes;
  const bool aligned =
      sized && (reinterpret_cast<std::uintptr_t>(dst) | reinterpret_cast<std::uintptr_t>(src)) % static_cast<unsigned>(bytes) == 0;
  if (!aligned) {
    tl_block->record_failure(thread_name(f) + ": cp.async (line " + std::to_string(site) + ") of " +
                             std::to_string(bytes) + " bytes, " + std::to_string(src_bytes) +
                             " from the source, at addresses that are not " + std::to_string(bytes) +
                             "-byte aligned or with a source size past the copy");
    tl_block->abandon();
  }
  if (tl_block->copies_land_at_issue()) land({dst, src, bytes, src_bytes});
  else f.copies.push_back({dst, src, bytes, src_bytes});
}

void rt_cp_async_wait_all(int) {
  Thread& f = running_thread();
  for (const PendingCopy& c : f.copies) land(c);
  f.copies.clear();
}

unsigned short rt_f16_bits(float x) { return f32_to_f16(x); }

void rt_misaligned_vector(const void* address, int bytes, int site) {
  std::ostringstream where;
  where << address;
  tl_block->record_failure(thread_name(running_thread()) + ": a " + std::to_string(bytes) + "-byte vector " +
                           (site > 0 ? "load (line " + std::to_string(site) + ")" : std::string("store")) + " at " +
                           where.str() + ", not " + std::to_string(bytes) + "-byte aligned (a misaligned address on a GPU)");
  tl_block->abandon();
}

const cannl_cpu_runtime kRuntime = {rt_syncthreads, rt_shfl_down, rt_mma, rt_ldmatrix, rt_cp_async, rt_cp_async_wait_all,
                                    rt_f16_bits, rt_misaligned_vector};

std::size_t page_size() { return static_cast<std::size_t>(sysconf(_SC_PAGESIZE)); }

}  // namespace

struct CpuKernelRunner::Impl {
  std::size_t stack_bytes;
  std::vector<Thread> threads;
  std::vector<Fiber> fibers;
  std::vector<std::pair<void*, std::size_t>> mappings;

  ~Impl() {
    for (const auto& [address, bytes] : mappings) munmap(address, bytes);
  }

  // Threads, and fibers with their stacks, for blocks of `count` threads (kept for later launches).
  void reserve(std::size_t count) {
    if (threads.size() < count) threads.resize(count);
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
    Thread& t = impl_->threads[i];
    const std::int64_t k = static_cast<std::int64_t>(i);
    t.self.thread = {u(k % b[0]), u(k / b[0] % b[1]), u(k / (b[0] * b[1]))};
    t.self.block_dim = {u(b[0]), u(b[1]), u(b[2])};
    t.self.grid_dim = {u(g[0]), u(g[1]), u(g[2])};
  }
  Block block(impl_->threads, impl_->fibers, impl_->stack_bytes, kernel, args);
  const std::int64_t blocks = g[0] * g[1] * g[2];
  for (std::int64_t k = 0; k < blocks; ++k) {
    const std::int64_t id = order == CpuThreadOrder::Forward ? k : blocks - 1 - k;
    const cannl_cpu_dim3 here = {u(id % g[0]), u(id / g[0] % g[1]), u(id / (g[0] * g[1]))};
    for (std::size_t i = 0; i < threads; ++i) impl_->threads[i].self.block = here;
    block.run(threads, order);
  }
}

const cannl_cpu_runtime& cpu_runtime() { return kRuntime; }

}  // namespace cannl::backends::gpu

#ifdef CANNL_FIBERS_ASM_SWITCH
// Where cannl_fiber_start enters a new fiber.
extern "C" __attribute__((visibility("hidden"), used)) void cannl_fiber_entry() { cannl::backends::gpu::fiber_main(); }
#endif
