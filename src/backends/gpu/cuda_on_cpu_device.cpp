// The cuda-cpu device (device.h: open_cuda_on_cpu): the CUDA C++ text a CUDA device would get,
// compiled by the host's C++ compiler with cuda_on_cpu_shim.h in front and run by the fiber
// runner (cuda_on_cpu_runner.h). It checks on a machine without a GPU what NVRTC alone cannot:
// that the CUDA text computes the right numbers, warp shuffles, float4 lanes, tensor-core
// fragments (mma.sync / ldmatrix, as the PTX ISA lays them out) and cp.async staging included.
// It is a test device: one thread of the host runs every block in turn.
#include <cstring>
#include <filesystem>
#include <map>
#include <mutex>
#include <system_error>

#include "backends/cc/process.h"
#include "backends/cc/shared_library.h"
#include "backends/cc/toolchain.h"
#include "backends/gpu/cuda_on_cpu_runner.h"
#include "backends/gpu/device.h"
#include "backends/gpu/launch_checks.h"
#include "backends/gpu/module_cache.h"
#include "backends/gpu/param_array.h"
#include "backends/host_memory.h"
#include "cannl/ir/target.h"
#include "cannl/support/config.h"
#include "cannl/support/error.h"
#include "cannl/support/files.h"

namespace cannl::backends::gpu {

namespace texts {
// cuda_on_cpu_abi.h and cuda_on_cpu_shim.h, embedded by CMake (cannl_embed_text).
extern const char cuda_on_cpu_abi_h[];
extern const char cuda_on_cpu_shim_h[];
}  // namespace texts

namespace fs = std::filesystem;

namespace {

// The flags of a module: the cc backend's optimization level and target flags (the host's
// architecture: fmaf an instruction), and NVRTC's rounding whatever the cc backend's own
// rounding keys say: no contraction of a * b + c (its --fmad=false), no fast math. C++ without
// exceptions (the runner's errors are thrown outside the module's frames) and without warnings
// (the text is NVRTC's).
std::vector<std::string> host_flags(const cc::Toolchain& toolchain) {
  std::vector<std::string> flags = {"-x", "c++", "-std=c++17",
                                    "-O" + std::to_string(config::get_int_in("cc_optimization_level", 0, 3)),
                                    "-fPIC", "-shared", "-ffp-contract=off"};
  const std::vector<std::string> target = cc::target_flags(toolchain);
  flags.insert(flags.end(), target.begin(), target.end());
  const std::vector<std::string> libm = cc::libm_call_flags();  // powf(x, -1.0f) stays a call
  flags.insert(flags.end(), libm.begin(), libm.end());
  flags.insert(flags.end(), {"-fno-exceptions", "-fno-rtti", "-w"});
  return flags;
}

// Whether `toolchain` compiles C++ (a gcc without g++ does not): probed once per compiler.
void require_cxx(const cc::Toolchain& toolchain) {
  static std::mutex mutex;
  static std::map<std::string, std::string> problems;  // by compiler path; "" when it works
  const std::lock_guard lock(mutex);
  auto it = problems.find(toolchain.path);
  if (it == problems.end()) {
    const std::string src = cc::scratch_path("cxxprobe", ".cpp"), log = cc::scratch_path("cxxprobe", ".txt");
    files::write_atomically(src, "template <class T> struct cannl_probe { T v; };\ncannl_probe<int> cannl_probed;\n");
    const cc::ProcessResult r = cc::run_process({toolchain.path, "-x", "c++", "-std=c++17", "-fsyntax-only", src}, log);
    std::string problem;
    if (!r.started || r.exit_status != 0) problem = r.started ? files::read_file(log) : r.error;
    std::error_code ec;
    fs::remove(src, ec);
    fs::remove(log, ec);
    it = problems.emplace(toolchain.path, problem).first;
  }
  if (!it->second.empty())
    throw BackendUnavailable("cuda-cpu compiles CUDA text as C++, but " + toolchain.path +
                             " does not compile C++ (install g++, or set cc_compiler): " + it->second);
}

class CpuCudaBuffer final : public Buffer {
 public:
  CpuCudaBuffer(const void* device, std::size_t bytes) : device_(device), storage_(bytes) {}
  std::size_t size() const override { return storage_.size(); }
  void read(std::span<std::byte> out) const override { storage_.read(out); }
  void write(std::span<const std::byte> in) override { storage_.write(in); }
  // Device memory, as on a GPU: the runtime copies to and from it like any device's.
  std::byte* data() { return storage_.host_data(); }
  const void* device() const { return device_; }

 private:
  const void* device_;
  CpuBuffer storage_;
};

class CpuCudaModule final : public Module {
 public:
  CpuCudaModule(const void* device, std::shared_ptr<cc::SharedLibrary> library, std::vector<std::string> names,
                bool from_cache)
      : device_(device), library_(std::move(library)), names_(std::move(names)), from_cache_(from_cache) {
    const auto bind = reinterpret_cast<void (*)(const cannl_cpu_runtime*)>(library_->symbol("cannl_cpu_bind"));
    bind(&cpu_runtime());
    const auto slot = reinterpret_cast<const cannl_cpu_thread** (*)()>(library_->symbol("cannl_cpu_self_slot"))();
    char* shared_begin = nullptr;
    char* shared_end = nullptr;
    reinterpret_cast<void (*)(char**, char**)>(library_->symbol("cannl_cpu_shared"))(&shared_begin, &shared_end);
    for (const std::string& name : names_)
      kernels_.push_back({name, reinterpret_cast<void (*)(void**)>(library_->symbol("cannl_cpu_entry_" + name)), slot,
                          *static_cast<const int*>(library_->symbol("cannl_cpu_arity_" + name)), shared_begin,
                          shared_end});
  }
  const std::vector<std::string>& kernel_names() const override { return names_; }
  bool from_cache() const override { return from_cache_; }
  const CpuKernel& kernel(std::size_t k) const { return kernels_[k]; }
  const void* device() const { return device_; }

 private:
  const void* device_;
  std::shared_ptr<cc::SharedLibrary> library_;
  std::vector<std::string> names_;
  std::vector<CpuKernel> kernels_;
  bool from_cache_;
};

class CpuCudaEvent final : public Event {
 public:
  void wait() override {}
};

CpuThreadOrder configured_order() {
  return config::get_one_of<CpuThreadOrder>("cuda_cpu_thread_order",
                                            {{"forward", CpuThreadOrder::Forward}, {"reverse", CpuThreadOrder::Reverse}});
}

class CpuCudaDevice final : public Device {
 public:
  CpuCudaDevice()
      : toolchain_(cc::find_toolchain()), flags_(host_flags(toolchain_)), limits_(ir::sm90_gpu_limits()), order_(configured_order()) {
    require_cxx(toolchain_);
  }

  std::string_view api() const override { return "cuda-cpu"; }
  std::string description() const override {
    return "CUDA C++ for sm_90 run on the CPU (cuda-cpu test device, " + toolchain_.path + ", threads in " +
           (order_ == CpuThreadOrder::Forward ? "forward" : "reverse") + " order)";
  }
  const ir::GpuLimits& limits() const override { return limits_; }
  std::string cache_tag() const override {
    std::string flags;
    for (const std::string& f : flags_) flags += " " + f;
    return "cuda-cpu " + toolchain_.identity + flags;
  }
  std::vector<ir::NarrowFormat> mma_formats() const override { return cuda_mma_formats("sm_90"); }
  bool async_copy() const override { return cuda_async_copy("sm_90"); }

  std::unique_ptr<Buffer> allocate(std::size_t bytes) override { return std::make_unique<CpuCudaBuffer>(this, bytes); }
  void fill_zero(Buffer& buffer) override {
    CpuCudaBuffer& b = own(buffer, "fill_zero");
    std::memset(b.data(), 0, b.size());
  }
  void copy(Buffer& dst, const Buffer& src) override {
    CpuCudaBuffer& to = own(dst, "copy (destination)");
    CpuCudaBuffer& from = own(const_cast<Buffer&>(src), "copy (source)");
    if (to.size() != from.size())
      throw RuntimeUsageError("cuda-cpu copy: the destination has " + std::to_string(to.size()) + " bytes, the source " +
                              std::to_string(from.size()));
    std::memcpy(to.data(), from.data(), to.size());
  }

  std::shared_ptr<Module> load(const std::string& source, const std::vector<std::string>& kernels,
                               const fs::path& cache_dir) override;
  void launch(Module& module, std::size_t kernel, const ir::KernelGeometry& geometry,
              std::span<const KernelArg> args) override;
  std::unique_ptr<Event> record(bool) override { return std::make_unique<CpuCudaEvent>(); }
  void synchronize() override {}

 private:
  CpuCudaBuffer& own(Buffer& buffer, const char* what) const {
    auto* b = dynamic_cast<CpuCudaBuffer*>(&buffer);
    if (b == nullptr || b->device() != this)
      throw RuntimeUsageError(std::string("cuda-cpu ") + what + ": the buffer is not one of this device's");
    return *b;
  }
  std::string compile(const std::string& text, const std::string& name) const;
  std::shared_ptr<Module> open(const std::string& image, const std::vector<std::string>& kernels, bool from_cache) const;

  const cc::Toolchain& toolchain_;
  std::vector<std::string> flags_;
  ir::GpuLimits limits_;
  CpuThreadOrder order_;
  std::mutex launch_mutex_;
  CpuKernelRunner runner_;
};

// The module's text for the host compiler: the ABI and the shim, the CUDA text as NVRTC gets it
// (its lines numbered as in the .cu file), and an entry per kernel.
std::string host_text(const std::string& source, const std::vector<std::string>& kernels, const std::string& name) {
  std::string text = std::string(texts::cuda_on_cpu_abi_h) + texts::cuda_on_cpu_shim_h + "#line 1 \"" + name + ".cu\"\n" +
                     source + "\n";
  for (const std::string& k : kernels) {
    text += "extern \"C\" void cannl_cpu_entry_" + k + "(void** args) { cannl_cpu_invoke(&" + k + ", args); }\n";
    text += "extern \"C\" const int cannl_cpu_arity_" + k + " = cannl_cpu_arity(&" + k + ");\n";
  }
  return text;
}

// The shared library's bytes, compiled from `text`; CompileError with the compiler's output.
std::string CpuCudaDevice::compile(const std::string& text, const std::string& name) const {
  const std::string src = cc::scratch_path(name, ".cpp"), lib = cc::scratch_path(name, ".so"),
                    log = cc::scratch_path(name, ".txt");
  files::write_atomically(src, text);
  std::vector<std::string> argv = {toolchain_.path};
  argv.insert(argv.end(), flags_.begin(), flags_.end());
  argv.insert(argv.end(), {"-o", lib, src, "-lm"});
  const cc::ProcessResult r = cc::run_process(argv, log);
  std::error_code ec;
  if (!r.started || r.exit_status != 0) {
    const std::string output = r.started ? files::read_file(log) : r.error;
    fs::remove(log, ec);
    throw CompileError("cuda-cpu: the host compiler rejected module " + name + " (" + cc::shell_quoted(argv) +
                       "; the source is kept at " + src + "):\n" + output);
  }
  std::string image = files::read_file(lib);
  fs::remove(src, ec);
  fs::remove(lib, ec);
  fs::remove(log, ec);
  return image;
}

// Loads a library image: written to a scratch file, opened, the file removed (the mapping stays).
std::shared_ptr<Module> CpuCudaDevice::open(const std::string& image, const std::vector<std::string>& kernels,
                                            bool from_cache) const {
  const std::string path = cc::scratch_path("cuda-cpu-module", ".so");
  files::write_atomically(path, image);
  std::shared_ptr<cc::SharedLibrary> library;
  try {
    library = cc::SharedLibrary::open(path);
  } catch (...) {
    std::error_code ec;
    fs::remove(path, ec);
    throw;
  }
  std::error_code ec;
  fs::remove(path, ec);
  return std::make_shared<CpuCudaModule>(this, std::move(library), kernels, from_cache);
}

std::shared_ptr<Module> CpuCudaDevice::load(const std::string& source, const std::vector<std::string>& kernels,
                                            const fs::path& cache_dir) {
  const std::string name = kernels.empty() ? "module" : kernels.front();
  const std::string text = host_text(source, kernels, name);
  const ModuleCacheEntry entry = module_cache_entry(cache_dir, name, "cpu.so", text + "\n" + cache_tag());
  if (auto cached = read_cached_module(entry)) {
    try {
      return open(*cached, kernels, true);
    } catch (const CompileError& e) {
      discard_cached_module(entry, std::string("it does not load: ") + e.what());
    }
  }
  const std::string image = compile(text, name);
  auto module = open(image, kernels, false);
  store_cached_module(entry, image);
  return module;
}

void CpuCudaDevice::launch(Module& module, std::size_t kernel, const ir::KernelGeometry& geometry,
                           std::span<const KernelArg> args) {
  auto* m = dynamic_cast<CpuCudaModule*>(&module);
  if (m == nullptr || m->device() != this) throw RuntimeUsageError("cuda-cpu launch: the module is not one of this device's");
  if (kernel >= m->kernel_names().size())
    throw RuntimeUsageError("cuda-cpu launch: kernel " + std::to_string(kernel) + " of a module of " +
                            std::to_string(m->kernel_names().size()));
  const std::string& name = m->kernel_names()[kernel];
  check_arity("cuda-cpu", name, args.size(), m->kernel(kernel).arity);
  if (!launchable(geometry, limits_, name)) return;
  ParamArray params(args.size());
  for (std::size_t k = 0; k < args.size(); ++k) {
    if (const auto* value = std::get_if<std::int64_t>(&args[k])) {
      params.values()[k] = static_cast<unsigned long long>(*value);
      continue;
    }
    const Buffer* buffer = std::get<const Buffer*>(args[k]);
    if (buffer == nullptr) throw RuntimeUsageError("cuda-cpu launch of " + name + ": argument " + std::to_string(k) + " is null");
    params.values()[k] = reinterpret_cast<unsigned long long>(own(const_cast<Buffer&>(*buffer), "launch").data());
  }
  const std::lock_guard lock(launch_mutex_);
  runner_.run(m->kernel(kernel), geometry, params.pointers(), order_);
}

}  // namespace

std::shared_ptr<Device> open_cuda_on_cpu() { return std::make_shared<CpuCudaDevice>(); }

}  // namespace cannl::backends::gpu
