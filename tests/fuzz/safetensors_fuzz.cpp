// libFuzzer target: any bytes as a safetensors file. The only acceptable failure is FormatError;
// anything else (another exception, a crash, a sanitizer report) is a bug. Valid files are read
// through every accessor so payload views are exercised too.
#include <cstddef>
#include <cstdint>
#include <string>

#include "cannl/io/safetensors.h"
#include "cannl/support/error.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace cannl;
  try {
    auto file = io::SafetensorsFile::from_bytes(std::string(reinterpret_cast<const char*>(data), size), "fuzz");
    for (const io::TensorInfo& info : file.tensors()) {
      (void)file.raw_bytes(info.name);
      try {
        (void)file.to_f64(info.name);
      } catch (const FormatError&) {  // e.g. a BOOL byte other than 0/1
      }
    }
    (void)file.metadata();
  } catch (const FormatError&) {
  }
  return 0;
}
