#pragma once
// The parameter array of a kernel launch on CUDA and HIP (cuLaunchKernel, hipModuleLaunchKernel
// and their graph nodes): each argument's 8-byte value (a device pointer, or a static as long
// long) and a pointer to each value; on the stack for the usual counts, so that a launch
// allocates nothing.
//
//   ParamArray params(args.size());
//   params.values()[0] = device_pointer;  ...  cuLaunchKernel(..., params.pointers(), nullptr);

#include <array>
#include <cstddef>
#include <vector>

namespace cannl::backends::gpu {

class ParamArray {
 public:
  explicit ParamArray(std::size_t count) : count_(count) {
    if (count > kInline) {
      spilled_values_.resize(count);
      spilled_pointers_.resize(count);
    }
    for (std::size_t k = 0; k < count; ++k) pointers()[k] = &values()[k];
  }
  ParamArray(const ParamArray&) = delete;
  ParamArray& operator=(const ParamArray&) = delete;

  std::size_t size() const { return count_; }
  unsigned long long* values() { return count_ > kInline ? spilled_values_.data() : inline_values_.data(); }
  void** pointers() { return count_ > kInline ? spilled_pointers_.data() : inline_pointers_.data(); }

 private:
  static constexpr std::size_t kInline = 32;
  std::size_t count_;
  std::array<unsigned long long, kInline> inline_values_{};
  std::array<void*, kInline> inline_pointers_{};
  std::vector<unsigned long long> spilled_values_;
  std::vector<void*> spilled_pointers_;
};

}  // namespace cannl::backends::gpu
