// Safetensors reading and writing: every dtype round trips bit for bit through a file, metadata
// and layout follow the format, conversions to floats are the documented ones, writes are atomic.
#include "cannl/io/safetensors.h"

#include <gtest/gtest.h>

#include <sys/resource.h>
#include <unistd.h>

#include <cmath>
#include <cstring>

#include "cannl/support/error.h"
#include "io/io_test_util.h"

namespace cannl::io {
namespace {

using testing_util::expect_error;
using testing_util::scratch_dir;
using testing_util::slurp;

/// Deterministic pseudo-random bytes (every bit pattern, NaNs included, must survive).
std::vector<std::byte> pattern_bytes(std::size_t count, unsigned seed) {
  std::vector<std::byte> bytes(count);
  std::uint32_t state = seed * 2654435761u + 1;
  for (auto& b : bytes) {
    state = state * 1664525u + 1013904223u;
    b = static_cast<std::byte>(state >> 24);
  }
  return bytes;
}

TEST(Safetensors, EveryDTypeRoundTripsBitExactThroughAFile) {
  const auto dir = scratch_dir();
  std::vector<std::vector<std::byte>> payloads;
  std::vector<TensorToWrite> tensors;
  unsigned seed = 0;
  for (SafetensorsDType dtype : kAllSafetensorsDTypes) {
    const std::vector<std::int64_t> shape{2, 3};
    payloads.push_back(dtype == SafetensorsDType::BOOL
                           ? std::vector<std::byte>{std::byte{0}, std::byte{1}, std::byte{1},
                                                    std::byte{0}, std::byte{0}, std::byte{1}}
                           : pattern_bytes(6 * safetensors_dtype_bytes(dtype), ++seed));
    tensors.push_back({"t_" + std::string(safetensors_dtype_name(dtype)), dtype, shape, payloads.back()});
  }
  write_safetensors(dir / "all.safetensors", tensors, {{"format", "pt"}});
  auto file = SafetensorsFile::open(dir / "all.safetensors");
  ASSERT_EQ(file.tensors().size(), tensors.size());
  EXPECT_EQ(file.metadata().at("format"), "pt");
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    const TensorInfo& info = file.info(tensors[i].name);
    EXPECT_EQ(info.dtype, tensors[i].dtype);
    EXPECT_EQ(info.shape, tensors[i].shape);
    auto raw = file.raw_bytes(tensors[i].name);
    ASSERT_EQ(raw.size(), payloads[i].size());
    EXPECT_EQ(std::memcmp(raw.data(), payloads[i].data(), raw.size()), 0) << tensors[i].name;
  }
  EXPECT_EQ(file.to_f64("t_BOOL"), (std::vector<double>{0, 1, 1, 0, 0, 1}));
}

TEST(Safetensors, ConvertsEveryDTypeFromAndToHostNumbers) {
  const std::vector<double> values{0, 1, -2, 3.5, 100, -0.25};
  for (SafetensorsDType dtype : kAllSafetensorsDTypes) {
    SCOPED_TRACE(safetensors_dtype_name(dtype));
    std::vector<std::byte> bytes = encode_from_f64(dtype, values);
    std::vector<double> back = decode_to_f64(dtype, bytes);
    std::vector<float> back32 = decode_to_f32(dtype, bytes);
    ASSERT_EQ(back.size(), values.size());
    for (std::size_t k = 0; k < values.size(); ++k) {
      double expected = values[k];
      if (dtype == SafetensorsDType::BOOL) expected = values[k] != 0;
      else if (dtype == SafetensorsDType::U8 || dtype == SafetensorsDType::U16 ||
               dtype == SafetensorsDType::U32 || dtype == SafetensorsDType::U64)
        expected = std::max(0.0, std::trunc(values[k]));
      else if (dtype == SafetensorsDType::I8 || dtype == SafetensorsDType::I16 ||
               dtype == SafetensorsDType::I32 || dtype == SafetensorsDType::I64)
        expected = std::trunc(values[k]);
      else if (dtype == SafetensorsDType::F8_E5M2 && values[k] == 100)
        expected = 96;  // 1.5 * 2^6 is the nearest E5M2 value
      else if (dtype == SafetensorsDType::F8_E4M3 && values[k] == 100)
        expected = 96;  // 1.5 * 2^6 = 96, next is 104
      EXPECT_EQ(back[k], expected) << k;
      EXPECT_EQ(back32[k], static_cast<float>(expected)) << k;
    }
  }
}

TEST(Safetensors, RoundsLargeIntegersToFloatOnce) {
  // 2^60 + 2^36 + 1 is just above halfway between the floats 2^60 and 2^60 + 2^37. Through a
  // double it rounds twice, to 2^60 + 2^36 (halfway) and then to even, 2^60.
  const std::int64_t big = (std::int64_t{1} << 60) + (std::int64_t{1} << 36) + 1;
  const float nearest = 0x1p60f + 0x1p37f;
  const std::uint64_t ubig = static_cast<std::uint64_t>(big);
  const auto signed_bytes = std::as_bytes(std::span(&big, 1));
  const auto unsigned_bytes = std::as_bytes(std::span(&ubig, 1));
  EXPECT_EQ(decode_to_f32(SafetensorsDType::I64, signed_bytes), std::vector<float>{nearest});
  EXPECT_EQ(decode_to_f32(SafetensorsDType::U64, unsigned_bytes), std::vector<float>{nearest});
  const std::vector<TensorToWrite> tensors{{"i", SafetensorsDType::I64, {1}, signed_bytes},
                                           {"u", SafetensorsDType::U64, {1}, unsigned_bytes}};
  auto file = SafetensorsFile::from_bytes(serialize_safetensors(tensors), "mem.safetensors");
  EXPECT_EQ(file.to_f32("i"), std::vector<float>{nearest});
  EXPECT_EQ(file.to_f32("u"), std::vector<float>{nearest});
}

TEST(Safetensors, MapsCannlDTypesToStorageFormats) {
  EXPECT_EQ(to_cannl_dtype(SafetensorsDType::F8_E5M2), ir::DType::FP8);
  EXPECT_EQ(to_safetensors_dtype(ir::DType::FP8), SafetensorsDType::F8_E5M2);
  EXPECT_EQ(to_cannl_dtype(SafetensorsDType::F8_E4M3), std::nullopt);
  EXPECT_EQ(to_cannl_dtype(SafetensorsDType::I16), std::nullopt);
  EXPECT_EQ(to_safetensors_dtype(ir::DType::U4x32), std::nullopt);
  for (ir::DType t : ir::kAllDTypes) {
    auto st = to_safetensors_dtype(t);
    if (!st) continue;
    EXPECT_EQ(to_cannl_dtype(*st), t);
    EXPECT_EQ(safetensors_dtype_bytes(*st), ir::dtype_bytes(t));
    EXPECT_EQ(safetensors_dtype_from_name(safetensors_dtype_name(*st)), st);
  }
  EXPECT_EQ(safetensors_dtype_from_name("f32"), std::nullopt);  // names are case-sensitive
}

TEST(Safetensors, DecodesE4M3AsPyTorchDoes) {
  EXPECT_EQ(f8_e4m3_to_f32(0x38), 1.0f);
  EXPECT_EQ(f8_e4m3_to_f32(0x7E), 448.0f);
  EXPECT_EQ(f8_e4m3_to_f32(0xFE), -448.0f);
  EXPECT_EQ(f8_e4m3_to_f32(0x01), std::ldexp(1.0f, -9));  // smallest subnormal
  EXPECT_TRUE(std::isnan(f8_e4m3_to_f32(0x7F)));
  EXPECT_EQ(f64_to_f8_e4m3(1e9), 0x7E);    // saturates
  EXPECT_EQ(f64_to_f8_e4m3(-INFINITY), 0xFE);
  EXPECT_EQ(f64_to_f8_e4m3(NAN), 0x7F);
  // Every finite code round-trips, and halfway points round to even.
  for (int bits = 0; bits < 256; ++bits) {
    float value = f8_e4m3_to_f32(static_cast<std::uint8_t>(bits));
    if (std::isnan(value)) continue;
    EXPECT_EQ(f64_to_f8_e4m3(value), bits) << bits;
  }
  EXPECT_EQ(f64_to_f8_e4m3(1.0625), 0x38);  // halfway between 1 and 1.125: even mantissa 0
  EXPECT_EQ(f64_to_f8_e4m3(1.1875), 0x3A);  // halfway between 1.125 and 1.25: even mantissa 2
}

TEST(Safetensors, RejectsNonBooleanBoolBytes) {
  const std::vector<std::byte> bytes{std::byte{0}, std::byte{2}};
  std::vector<TensorToWrite> tensors{{"flags", SafetensorsDType::BOOL, {2}, bytes}};
  auto file = SafetensorsFile::from_bytes(serialize_safetensors(tensors), "mem");
  expect_error<FormatError>([&] { file.to_f32("flags"); }, {"mem", "\"flags\"", "holds byte 2"});
}

TEST(Safetensors, LayoutFollowsTheFormat) {
  const std::vector<float> w{1.0f, 2.0f, 3.0f};
  std::vector<TensorToWrite> tensors{{"w", SafetensorsDType::F32, {3}, std::as_bytes(std::span(w))},
                                     {"scalar", SafetensorsDType::F32, {}, std::as_bytes(std::span(w).first(1))},
                                     {"empty", SafetensorsDType::F16, {0, 4}, {}}};
  const std::string image = serialize_safetensors(tensors, {{"k", "v"}});
  std::uint64_t header_length = 0;
  std::memcpy(&header_length, image.data(), 8);
  EXPECT_EQ((8 + header_length) % 8, 0u);  // data section aligned
  EXPECT_EQ(image.size(), 8 + header_length + 16);
  EXPECT_EQ(image.substr(8, 26), R"({"__metadata__":{"k":"v"},)");
  auto file = SafetensorsFile::from_bytes(image, "mem");
  EXPECT_EQ(file.tensors()[0].name, "w");
  EXPECT_EQ(file.to_f32("w"), w);
  EXPECT_EQ(file.info("scalar").num_elements(), 1);
  EXPECT_EQ(file.to_f32("scalar"), std::vector<float>{1.0f});
  EXPECT_EQ(file.info("empty").num_elements(), 0);
  EXPECT_TRUE(file.raw_bytes("empty").empty());
}

TEST(Safetensors, WriterRejectsBadTensorLists) {
  const std::vector<float> w{1.0f, 2.0f};
  auto bytes = std::as_bytes(std::span(w));
  using Tensors = std::vector<TensorToWrite>;
  expect_error<RuntimeUsageError>(
      [&] { serialize_safetensors(Tensors{{"w", SafetensorsDType::F32, {3}, bytes}}); },
      {"\"w\"", "8 bytes", "need 12"});
  expect_error<RuntimeUsageError>(
      [&] { serialize_safetensors(Tensors{{"w", SafetensorsDType::F32, {2}, bytes}, {"w", SafetensorsDType::F32, {2}, bytes}}); },
      {"appears twice"});
  expect_error<RuntimeUsageError>(
      [&] { serialize_safetensors(Tensors{{"__metadata__", SafetensorsDType::F32, {2}, bytes}}); },
      {"invalid"});
  expect_error<RuntimeUsageError>(
      [&] { serialize_safetensors(Tensors{{"w", SafetensorsDType::F32, std::vector<std::int64_t>(65, 1), bytes}}); },
      {"\"w\"", "65 dimensions", "at most 64"});
  // (2^62 + 1) * 4 elements * 4 bytes wraps to 16 in 64 bits: it must not pass for 16 bytes and
  // replace the good file with one the reader refuses.
  const std::vector<float> four{1.0f, 2.0f, 3.0f, 4.0f};
  const Tensors wrapping{{"w", SafetensorsDType::F32, {4611686018427387905, 4}, std::as_bytes(std::span(four))}};
  expect_error<RuntimeUsageError>([&] { serialize_safetensors(wrapping); },
                                  {"\"w\"", "[4611686018427387905, 4]", "overflows"});
  const auto path = scratch_dir() / "good.safetensors";
  write_safetensors(path, Tensors{{"w", SafetensorsDType::F32, {2}, bytes}});
  const std::string good = slurp(path);
  expect_error<RuntimeUsageError>([&] { write_safetensors(path, wrapping); }, {"overflows"});
  EXPECT_EQ(slurp(path), good);
}

TEST(Safetensors, MissingTensorNamesWhatTheFileHolds) {
  const std::vector<float> w{1.0f};
  std::vector<TensorToWrite> tensors{{"a", SafetensorsDType::F32, {1}, std::as_bytes(std::span(w))}};
  auto file = SafetensorsFile::from_bytes(serialize_safetensors(tensors), "mem.safetensors");
  expect_error<FormatError>([&] { file.raw_bytes("b"); }, {"mem.safetensors", "no tensor \"b\"", "\"a\""});
  EXPECT_EQ(file.find("b"), nullptr);
}

TEST(Safetensors, OpenReportsMissingFilesAsIoError) {
  expect_error<IoError>([&] { SafetensorsFile::open(scratch_dir() / "nope.safetensors"); },
                        {"cannot open", "nope.safetensors"});
}

TEST(Safetensors, PayloadsAreReadOnlyWhenAsked) {
  // A 2 GiB tensor in a sparse file: opening the file and reading the small tensor after it must
  // not read (or allocate) the big one.
  const auto path = scratch_dir() / "sparse.safetensors";
  const std::uint64_t big = 2ull << 30;
  const std::string header = R"({"big":{"dtype":"U8","shape":[)" + std::to_string(big) +
                             R"(],"data_offsets":[0,)" + std::to_string(big) +
                             R"(]},"tail":{"dtype":"F32","shape":[1],"data_offsets":[)" +
                             std::to_string(big) + "," + std::to_string(big + 4) + "]}}";
  std::string head(8, '\0');
  const std::uint64_t length = header.size();
  std::memcpy(head.data(), &length, 8);
  testing_util::spit(path, head + header);
  const float tail = 2.5f;
  std::filesystem::resize_file(path, 8 + length + big + 4);
  {
    std::fstream out(path, std::ios::binary | std::ios::in | std::ios::out);
    out.seekp(static_cast<std::streamoff>(8 + length + big));
    out.write(reinterpret_cast<const char*>(&tail), 4);
  }
  auto file = SafetensorsFile::open(path);
  EXPECT_EQ(file.to_f32("tail"), std::vector<float>{2.5f});
  EXPECT_EQ(file.raw_bytes("big").size(), big);
  rusage usage{};
  ::getrusage(RUSAGE_SELF, &usage);
  EXPECT_LT(usage.ru_maxrss, 1L << 20);  // kilobytes: well under the 2 GiB an eager read needs
  std::filesystem::remove(path);          // the mapping stays valid; the 2 GiB name goes
}

TEST(Safetensors, WriteIsAtomicWhenInterrupted) {
  const auto dir = scratch_dir();
  const auto path = dir / "w.safetensors";
  const std::vector<float> old_values{1, 2, 3};
  std::vector<TensorToWrite> old_tensors{{"w", SafetensorsDType::F32, {3}, std::as_bytes(std::span(old_values))}};
  write_safetensors(path, old_tensors);
  const std::string before = slurp(path);

  const std::vector<std::byte> big = pattern_bytes(3 << 20, 7);  // several chunks
  std::vector<TensorToWrite> new_tensors{{"big", SafetensorsDType::U8, {3 << 20}, big}};
  int calls = 0;
  WriteOptions options{.progress = [&](std::uint64_t written, std::uint64_t total) {
    ++calls;
    if (written * 2 >= total) throw IoError("simulated crash halfway");
  }};
  expect_error<IoError>([&] { write_safetensors(path, new_tensors, {}, options); }, {"simulated crash"});
  EXPECT_GE(calls, 2);
  EXPECT_EQ(slurp(path), before);
  EXPECT_EQ(SafetensorsFile::open(path).to_f32("w"), old_values);
  // No temporary file is left behind.
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir), {}), 1);
}

}  // namespace
}  // namespace cannl::io
