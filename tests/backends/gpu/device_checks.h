#pragma once
// Checks every GPU device must pass, written once for both APIs: the OpenCL tests run them on
// PoCL (in CI), the CUDA tests on a real GPU where one is present.
//
//   check_buffers(*device);
//   check_axpy(*device, opencl_axpy_source(), cache_dir);   // returns the module it loaded

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "backends/gpu/device.h"
#include "cannl/support/error.h"
#include "cannl/support/files.h"

namespace cannl::test_gpu {

namespace fs = std::filesystem;
using backends::gpu::Device;
using backends::gpu::KernelArg;
using backends::gpu::Module;

/// An empty folder for one test's module cache, under build_files/.
inline fs::path fresh_cache_dir(const std::string& test) {
  const fs::path dir = fs::absolute(files::build_dir() / "gpu_module_cache" / test);
  fs::remove_all(dir);
  return dir;
}

/// The compiled entries of a module cache folder (not their records).
inline std::vector<fs::path> cache_entries(const fs::path& dir) {
  std::vector<fs::path> out;
  std::error_code error;
  for (const auto& e : fs::directory_iterator(dir, error))
    if (e.is_regular_file() && e.path().extension() != ".entry" && e.path().filename().string()[0] != '.')
      out.push_back(e.path());
  return out;
}

template <class T>
std::vector<std::byte> bytes_of(const std::vector<T>& values) {
  std::vector<std::byte> out(values.size() * sizeof(T));
  std::memcpy(out.data(), values.data(), out.size());
  return out;
}

template <class T>
std::vector<T> read_as(const backends::Buffer& buffer) {
  std::vector<std::byte> raw(buffer.size());
  buffer.read(raw);
  std::vector<T> out(raw.size() / sizeof(T));
  std::memcpy(out.data(), raw.data(), out.size() * sizeof(T));
  return out;
}

/// c[i, j] = a[i, j] + b[i, j] * s over rows x cols, one thread per element on a 2-D launch
/// (slot x: columns, slot y: rows) with guards for the threads past the edges.
inline std::string opencl_axpy_source() {
  return R"(__kernel void axpy2d(__global float* c, __global const float* a, __global const float* b,
                     long s, long rows, long cols) {
  long i = (long)get_group_id(1) * (long)get_local_size(1) + (long)get_local_id(1);
  long j = (long)get_group_id(0) * (long)get_local_size(0) + (long)get_local_id(0);
  if (i < rows && j < cols) c[i * cols + j] = a[i * cols + j] + b[i * cols + j] * (float)s;
}
)";
}

inline std::string cuda_axpy_source() {
  return R"(extern "C" __global__ void axpy2d(float* c, const float* a, const float* b,
                                   long long s, long long rows, long long cols) {
  long long i = (long long)blockIdx.y * blockDim.y + threadIdx.y;
  long long j = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < rows && j < cols) c[i * cols + j] = a[i * cols + j] + b[i * cols + j] * (float)s;
}
)";
}

/// Round trips, zeroing at allocation and by fill_zero, device copies, events, size checks.
inline void check_buffers(Device& device) {
  const std::vector<std::int32_t> values{1, -2, 3, 1 << 30, 5, 6, 7, 8, 9};
  auto a = device.allocate(values.size() * 4);
  auto b = device.allocate(values.size() * 4);
  EXPECT_EQ(a->size(), values.size() * 4);
  EXPECT_EQ(a->host_data(), nullptr);
  EXPECT_EQ(read_as<std::int32_t>(*a), std::vector<std::int32_t>(values.size(), 0)) << "allocate zeroes";
  a->write(bytes_of(values));
  EXPECT_EQ(read_as<std::int32_t>(*a), values);
  device.copy(*b, *a);
  device.fill_zero(*a);
  auto event = device.record();
  event->wait();
  EXPECT_EQ(read_as<std::int32_t>(*b), values) << "copy";
  EXPECT_EQ(read_as<std::int32_t>(*a), std::vector<std::int32_t>(values.size(), 0)) << "fill_zero";
  device.synchronize();

  std::vector<std::byte> wrong(3);
  EXPECT_THROW(a->read(wrong), RuntimeUsageError);
  EXPECT_THROW(a->write(wrong), RuntimeUsageError);
  auto small = device.allocate(8);
  EXPECT_THROW(device.copy(*small, *a), RuntimeUsageError);
  auto empty = device.allocate(0);
  EXPECT_EQ(empty->size(), 0u);
  std::vector<std::byte> none;
  empty->write(none);
  empty->read(none);
  device.fill_zero(*empty);
}

/// Every kind of call a device takes, on the device `open` makes: allocate, write, copy,
/// fill_zero, load (through `cache_dir`), launch, record and wait, read, an allocation that throws,
/// and the releases; `after(what)` runs after each group of them (what the calls left on the
/// thread: its current context or device).
inline void each_device_call(const std::function<std::shared_ptr<Device>()>& open, const fs::path& cache_dir,
                             const std::function<void(const char*)>& after) {
  auto device = open();
  after("opening the device");
  auto a = device->allocate(35 * 4), b = device->allocate(35 * 4), c = device->allocate(35 * 4);
  a->write(bytes_of(std::vector<float>(35, 1.0f)));
  device->copy(*b, *a);
  device->fill_zero(*c);
  after("allocate, write, copy and fill_zero");
  auto module = device->load(cuda_axpy_source(), {"axpy2d"}, cache_dir);
  const std::vector<KernelArg> args{c.get(), a.get(), b.get(), std::int64_t{2}, std::int64_t{5}, std::int64_t{7}};
  device->launch(*module, 0, {.grid = {2, 5, 1}, .block = {4, 1, 1}}, args);
  after("load and launch");
  auto event = device->record();
  event->wait();
  EXPECT_EQ(read_as<float>(*c), std::vector<float>(35, 3.0f));
  after("record, wait and read");
  EXPECT_THROW(device->allocate(std::size_t{1} << 41), ResourceError);
  after("an allocation that threw");
  event.reset();
  module.reset();
  a.reset();
  after("releasing an event, a module and a buffer");
  b.reset();
  c.reset();
  device.reset();
  after("releasing the device");
}

/// Loads the axpy kernel of `source` (through the module cache at `cache_dir`; "" for none), runs
/// it on a 5 x 7 problem with 4 x 2 blocks (guards cut the last block of each slot) and checks
/// every element, and that nothing was written past the problem. Returns the module.
inline std::shared_ptr<Module> check_axpy(Device& device, const std::string& source, const fs::path& cache_dir) {
  constexpr std::int64_t rows = 5, cols = 7, pad = 16, s = 3;
  std::vector<float> a(rows * cols), b(rows * cols);
  for (std::size_t k = 0; k < a.size(); ++k) {
    a[k] = 0.5f * static_cast<float>(k);
    b[k] = static_cast<float>(k) - 10.0f;
  }
  auto c_buffer = device.allocate((rows * cols + pad) * sizeof(float));
  auto a_buffer = device.allocate(a.size() * sizeof(float));
  auto b_buffer = device.allocate(b.size() * sizeof(float));
  a_buffer->write(bytes_of(a));
  b_buffer->write(bytes_of(b));
  auto module = device.load(source, {"axpy2d"}, cache_dir);
  EXPECT_EQ(module->kernel_names(), std::vector<std::string>{"axpy2d"});
  ir::KernelGeometry geometry;
  geometry.block = {4, 2, 1};
  geometry.grid = {2, 3, 1};
  const std::vector<KernelArg> args{c_buffer.get(), a_buffer.get(), b_buffer.get(), std::int64_t{s},
                                    std::int64_t{rows}, std::int64_t{cols}};
  device.launch(*module, 0, geometry, args);
  device.synchronize();
  const auto c = read_as<float>(*c_buffer);
  for (std::size_t k = 0; k < a.size(); ++k) EXPECT_EQ(c[k], a[k] + b[k] * 3.0f) << "element " << k;
  for (std::size_t k = a.size(); k < c.size(); ++k) EXPECT_EQ(c[k], 0.0f) << "written past the guard at " << k;
  return module;
}

/// Launch argument and geometry checks on a module holding axpy2d.
inline void check_launch_errors(Device& device, Module& module, backends::Buffer& foreign) {
  auto buffer = device.allocate(64);
  ir::KernelGeometry geometry;
  geometry.block = {device.limits().max_threads_per_block + 1, 1, 1};
  const std::vector<KernelArg> args{buffer.get(), buffer.get(), buffer.get(), std::int64_t{1}, std::int64_t{1},
                                    std::int64_t{1}};
  try {
    device.launch(module, 0, geometry, args);
    ADD_FAILURE() << "expected RuntimeUsageError for a block over the limit";
  } catch (const RuntimeUsageError& e) {
    EXPECT_NE(std::string(e.what()).find("axpy2d"), std::string::npos) << e.what();
  }
  geometry.block = {1, 1, 1};
  EXPECT_THROW(device.launch(module, 1, geometry, args), RuntimeUsageError) << "no kernel 1";
  const std::vector<KernelArg> foreign_args{&foreign, buffer.get(), buffer.get(), std::int64_t{1}, std::int64_t{1},
                                            std::int64_t{1}};
  try {
    device.launch(module, 0, geometry, foreign_args);
    ADD_FAILURE() << "expected RuntimeUsageError for another device's buffer";
  } catch (const RuntimeUsageError& e) {
    EXPECT_NE(std::string(e.what()).find("not one of this device's"), std::string::npos) << e.what();
  }
  geometry.grid = {0, 1, 1};
  device.launch(module, 0, geometry, args);  // an empty grid launches nothing
  device.synchronize();
}

/// On a device whose `axpy2d` kernel (of `source`) allows only 128 threads a block: a launch and,
/// where the device has graphs, a graph of 256 are refused by name before the driver sees them;
/// 128 launches.
inline void check_kernel_thread_limit(Device& device, const std::string& source = cuda_axpy_source()) {
  auto module = device.load(source, {"axpy2d"}, "");
  auto buffer = device.allocate(64);
  const std::vector<KernelArg> args{buffer.get(), buffer.get(), buffer.get(), std::int64_t{1}, std::int64_t{1},
                                    std::int64_t{1}};
  ir::KernelGeometry geometry;
  geometry.block = {64, 4, 1};
  try {
    device.launch(*module, 0, geometry, args);
    ADD_FAILURE() << "a block of 256 threads reached the runtime";
  } catch (const RuntimeUsageError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("kernel axpy2d"), std::string::npos) << m;
    EXPECT_NE(m.find("threads per block is 256, over the kernel's own limit of 128"), std::string::npos) << m;
  }
  const std::vector<backends::gpu::LaunchStep> steps{{.kernel = 0, .geometry = geometry, .args = args}};
  std::string why;
  if (device.has_graphs()) {
    EXPECT_THROW(device.build_graph(*module, steps, "too_wide", why), RuntimeUsageError);
  }
  geometry.block = {32, 4, 1};
  device.launch(*module, 0, geometry, args);  // at the limit
  device.synchronize();
}

}  // namespace cannl::test_gpu
