#pragma once
// A backend that behaves as a GPU backend does towards the runtime: a run only enqueues its work,
// whose failure the backend reports later, when the host waits for it (synchronize, or a buffer
// read or write, which waits first). The work itself runs on the interpreter.
//
//   auto backend = std::make_shared<AsyncFailureBackend>();
//   runtime::Context ctx(backend);  ... ctx.run(step); backend->failed = true;  // step "failed"

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "cannl/backends/backend.h"
#include "cannl/support/error.h"

namespace cannl::testing {

/// The interpreter as a GPU backend behaves: a run only enqueues its work, whose failure the
/// backend reports later, when the host waits for it (synchronize, or a read, which waits first).
class AsyncFailureBackend : public backends::Backend {
 public:
  /// The work enqueued so far failed: the next wait reports it (once, as a GPU queue does).
  bool failed = false;

  std::string_view name() const override { return inner_->name(); }
  ir::Target target() const override { return inner_->target(); }
  std::unique_ptr<backends::Buffer> allocate(std::size_t bytes) override {
    return std::make_unique<WaitingBuffer>(inner_->allocate(bytes), *this);
  }
  std::unique_ptr<backends::Executable> compile(const backends::CompileRequest& request) override {
    return std::make_unique<Exe>(inner_->compile(request));
  }
  void synchronize() override {
    if (!failed) return;
    failed = false;
    throw RuntimeError("a kernel of the stream failed");
  }

 private:
  struct WaitingBuffer : backends::Buffer {
    WaitingBuffer(std::unique_ptr<backends::Buffer> inner, AsyncFailureBackend& owner)
        : inner(std::move(inner)), owner(owner) {}
    std::size_t size() const override { return inner->size(); }
    void read(std::span<std::byte> out) const override {
      owner.synchronize();
      inner->read(out);
    }
    void write(std::span<const std::byte> in) override {
      owner.synchronize();
      inner->write(in);
    }
    std::unique_ptr<backends::Buffer> inner;
    AsyncFailureBackend& owner;
  };
  struct Exe : backends::Executable {
    explicit Exe(std::unique_ptr<backends::Executable> inner) : inner(std::move(inner)) {}
    void run(std::span<backends::Buffer* const> buffers, std::span<const std::int64_t> statics) override {
      std::vector<backends::Buffer*> unwrapped;
      for (auto* b : buffers) unwrapped.push_back(static_cast<WaitingBuffer*>(b)->inner.get());
      inner->run(unwrapped, statics);
    }
    const std::string& source() const override { return inner->source(); }
    const ir::LoweredRoutine& routine() const override { return inner->routine(); }
    std::unique_ptr<backends::Executable> inner;
  };
  std::shared_ptr<backends::Backend> inner_ = backends::make_interpreter_backend();
};

}  // namespace cannl::testing
