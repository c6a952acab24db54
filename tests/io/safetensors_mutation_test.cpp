// A deterministic mini-fuzz that runs with every test build (the libFuzzer target,
// tests/fuzz/safetensors_fuzz.cpp, needs clang): the committed seeds and thousands of mutations
// of a valid file (flipped header bytes, truncations, lying lengths) are each either a valid
// file or a FormatError, never another exception or a crash.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <random>

#include "cannl/io/safetensors.h"
#include "cannl/support/error.h"
#include "io/io_test_util.h"

namespace cannl::io {
namespace {

/// Opens `bytes` and reads every tensor; returns whether the file was valid. Throws anything
/// other than FormatError through to the test.
bool read_everything(const std::string& bytes) {
  try {
    auto file = SafetensorsFile::from_bytes(bytes, "mutant");
    for (const TensorInfo& info : file.tensors()) {
      if (file.raw_bytes(info.name).size() != info.end - info.begin) ADD_FAILURE() << info.name;
      try {
        (void)file.to_f64(info.name);
      } catch (const FormatError&) {
      }
    }
    return true;
  } catch (const FormatError&) {
    return false;
  }
}

std::string valid_image() {
  static const std::vector<std::byte> payload(64, std::byte{1});
  std::vector<TensorToWrite> tensors{
      {"a", SafetensorsDType::F32, {2, 2}, std::span(payload).first(16)},
      {"b", SafetensorsDType::BF16, {3}, std::span(payload).first(6)},
      {"c", SafetensorsDType::BOOL, {2}, std::span(payload).first(2)},
      {"d", SafetensorsDType::F8_E4M3, {}, std::span(payload).first(1)},
      {"e", SafetensorsDType::I64, {0, 5}, {}}};
  return serialize_safetensors(tensors, {{"format", "pt"}});
}

TEST(SafetensorsMutation, CommittedSeedsAreHandled) {
  const auto dir = std::filesystem::path(CANNL_SOURCE_DIR) / "tests/fuzz/corpus/safetensors";
  int seeds = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    read_everything(testing_util::slurp(entry.path()));
    ++seeds;
  }
  EXPECT_GE(seeds, 5);
}

TEST(SafetensorsMutation, MutantsAreValidOrFormatErrors) {
  const std::string original = valid_image();
  ASSERT_TRUE(read_everything(original));
  std::uint64_t header_length = 0;
  std::memcpy(&header_length, original.data(), 8);
  std::mt19937 rng(2024);
  auto pick = [&](std::size_t n) { return std::uniform_int_distribution<std::size_t>(0, n - 1)(rng); };
  int valid = 0;
  for (int trial = 0; trial < 20000; ++trial) {
    std::string mutant = original;
    switch (trial % 4) {
      case 0:  // a few header bytes replaced
        for (int k = 0; k < 1 + trial % 3; ++k)
          mutant[8 + pick(header_length)] = static_cast<char>(pick(256));
        break;
      case 1:  // a header byte set to a JSON-significant character
        mutant[8 + pick(header_length)] = "{}[],:\"0123456789-eE.\\ "[pick(24)];
        break;
      case 2:  // truncated anywhere
        mutant.resize(pick(original.size()));
        break;
      default: {  // a lying header length
        std::uint64_t length = trial % 8 == 3 ? pick(original.size() * 2) : rng() * 0x100000001ull;
        std::memcpy(mutant.data(), &length, 8);
      }
    }
    valid += read_everything(mutant) ? 1 : 0;
  }
  EXPECT_GT(valid, 0);       // some mutations (digits in names, metadata) stay valid
  EXPECT_LT(valid, 20000);
}

}  // namespace
}  // namespace cannl::io
