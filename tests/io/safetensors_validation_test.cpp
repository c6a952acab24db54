// Hostile and broken safetensors files: each is a FormatError naming the file and, where one is
// at fault, the tensor; none is a crash or a read outside the file.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstring>
#include <filesystem>

#include "cannl/io/safetensors.h"
#include "cannl/support/error.h"
#include "io/io_test_util.h"

namespace cannl::io {
namespace {

using testing_util::expect_error;

/// 8-byte length + header + `data_bytes` zero bytes.
std::string image(const std::string& header, std::size_t data_bytes, std::uint64_t length_override = ~0ull) {
  std::uint64_t length = length_override != ~0ull ? length_override : header.size();
  std::string bytes(8, '\0');
  std::memcpy(bytes.data(), &length, 8);
  return bytes + header + std::string(data_bytes, '\0');
}

void expect_format_error(const std::string& bytes, std::initializer_list<std::string> substrings) {
  expect_error<FormatError>([&] { SafetensorsFile::from_bytes(bytes, "bad.safetensors"); }, substrings);
}

TEST(SafetensorsValidation, AcceptsAWellFormedHandWrittenFile) {
  auto file = SafetensorsFile::from_bytes(
      image(R"({"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]},"a":{"dtype":"I16","shape":[2],"data_offsets":[0,4]}})", 12),
      "ok");
  EXPECT_EQ(file.tensors().size(), 2u);
  EXPECT_EQ(file.tensors()[0].name, "b");  // header order kept
  EXPECT_EQ(file.info("a").end, 4u);
}

TEST(SafetensorsValidation, TooShortForTheLength) {
  expect_format_error("", {"bad.safetensors", "0 bytes", "shorter than the 8-byte header length"});
  expect_format_error("abc", {"3 bytes"});
}

TEST(SafetensorsValidation, HeaderLengthBeyondTheFile) {
  expect_format_error(image("{}", 0, 1000), {"bad.safetensors", "header length 1000 runs past the end"});
  expect_format_error(image("{}", 0, ~0ull - 1), {"runs past the end"});
}

TEST(SafetensorsValidation, TruncatedFile) {
  std::string whole = image(R"({"w":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})", 16);
  expect_format_error(whole.substr(0, whole.size() - 1), {"bad.safetensors", "tensor \"w\"", "past the end of the data section"});
  expect_format_error(whole.substr(0, 20), {"runs past the end of the file"});
}

TEST(SafetensorsValidation, NotJson) {
  expect_format_error(image("{\"w\": ", 0), {"bad.safetensors", "header: invalid JSON at byte"});
  expect_format_error(image("\xFF\xFE", 0), {"invalid JSON"});
  expect_format_error(image("[1, 2]", 0), {"header is not a JSON object"});
  expect_format_error(image(R"({"a":{"dtype":"F32","shape":[],"data_offsets":[0,4]},"a":1})", 4), {"duplicate key"});
}

TEST(SafetensorsValidation, MalformedEntries) {
  expect_format_error(image(R"({"w": 3})", 0), {"tensor \"w\"", "not a JSON object"});
  expect_format_error(image(R"({"w":{"shape":[1],"data_offsets":[0,4]}})", 4), {"tensor \"w\"", "missing \"dtype\""});
  expect_format_error(image(R"({"w":{"dtype":"F32","data_offsets":[0,4]}})", 4), {"missing \"shape\""});
  expect_format_error(image(R"({"w":{"dtype":"F32","shape":[1]}})", 4), {"missing \"data_offsets\""});
  expect_format_error(image(R"({"w":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})", 4), {"shape entry -1"});
  expect_format_error(image(R"({"w":{"dtype":"F32","shape":[1.5],"data_offsets":[0,4]}})", 4), {"shape entry 1.5"});
  expect_format_error(image(R"({"w":{"dtype":"F32","shape":"1","data_offsets":[0,4]}})", 4), {"wrong JSON type"});
  expect_format_error(image(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0]}})", 4), {"[begin, end]"});
  expect_format_error(image(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[4,0]}})", 4), {"end before they begin"});
  expect_format_error(image(R"({"__metadata__":{"k":1}})", 0), {"__metadata__ entry \"k\" is not a string"});
  expect_format_error(image(R"({"__metadata__":[]})", 0), {"__metadata__ must be an object"});
}

TEST(SafetensorsValidation, UnknownDType) {
  expect_format_error(image(R"({"w":{"dtype":"F128","shape":[1],"data_offsets":[0,16]}})", 16),
                      {"bad.safetensors", "tensor \"w\"", "unknown dtype \"F128\""});
}

TEST(SafetensorsValidation, ShapeAndOffsetsDisagree) {
  expect_format_error(image(R"({"w":{"dtype":"F32","shape":[2,3],"data_offsets":[0,20]}})", 20),
                      {"tensor \"w\"", "span 20 bytes", "shape [2, 3] of F32 needs 24"});
  expect_format_error(image(R"({"w":{"dtype":"F64","shape":[4294967296,4294967296],"data_offsets":[0,8]}})", 8),
                      {"overflows 64-bit"});
}

TEST(SafetensorsValidation, EmptyShapesWithHugeDimensionsCountZeroElements) {
  // 3 * 2^62 overflows int64 before the 0: the count must be 0, not undefined behaviour.
  auto file = SafetensorsFile::from_bytes(
      image(R"({"e":{"dtype":"U8","shape":[3,4611686018427387904,0],"data_offsets":[0,0]}})", 0), "ok");
  EXPECT_EQ(file.info("e").num_elements(), 0);
  // 2^62 * 3 elements of one byte fit 64-bit byte counts but not int64 element counts.
  expect_format_error(image(R"({"w":{"dtype":"U8","shape":[4611686018427387904,3],"data_offsets":[0,13835058055282163712]}})", 0),
                      {"bad.safetensors", "tensor \"w\"", "overflows 64-bit element counts"});
  TensorInfo lying{.name = "w", .shape = {std::int64_t{1} << 62, 4}};
  expect_error<FormatError>([&] { lying.num_elements(); }, {"tensor \"w\"", "[4611686018427387904, 4]"});
}

TEST(SafetensorsValidation, HugeShapesAreRefusedWhileParsing) {
  // Parsed as a document, each shape entry cost ~90 bytes for 2 bytes of header: a 40 MB header
  // of them took 2.9 GB. The reader stops at the rank limit.
  std::string zeros = "0";
  for (int i = 0; i < 100000; ++i) zeros += ",0";
  expect_format_error(image(R"({"w":{"dtype":"F32","shape":[)" + zeros + R"(],"data_offsets":[0,0]}})", 0),
                      {"bad.safetensors", "tensor \"w\"", "\"shape\" has more than 64 entries",
                       "at most 64 dimensions"});
  std::string ok_shape = "1";
  for (int i = 1; i < 64; ++i) ok_shape += ",1";
  auto file = SafetensorsFile::from_bytes(
      image(R"({"w":{"dtype":"F32","shape":[)" + ok_shape + R"(],"data_offsets":[0,4]}})", 4), "ok");
  EXPECT_EQ(file.info("w").shape.size(), 64u);
}

TEST(SafetensorsValidation, HeadersOfTooManyValuesAreRefusedWhileParsing) {
  // Many small tensors, each within the rank limit: the value limit bounds the whole header.
  std::string header = "{";
  const std::string shape = "[0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0]";
  for (int i = 0; i < 60000; ++i)  // 40 values each
    header += (i ? ",\"" : "\"") + std::to_string(i) + R"(":{"dtype":"F32","shape":)" + shape +
              R"(,"data_offsets":[0,0]})";
  expect_format_error(image(header + "}", 0),
                      {"bad.safetensors", "more than 2000000 JSON values", "in tensor \""});
}

TEST(SafetensorsValidation, MetadataOfTooManyEntriesIsRefused) {
  // Each entry costs a std::map node (about 100 bytes) for 8 bytes of header: capped apart from
  // the value limit, which would let 2 million of them through.
  std::string entries;
  for (int i = 0; i <= 65536; ++i) entries += (i ? ",\"" : "\"") + std::to_string(i) + "\":\"\"";
  expect_format_error(image(R"({"__metadata__":{)" + entries + "}}", 0),
                      {"bad.safetensors", "__metadata__ holds more than 65536 entries", "at byte"});
  entries = "\"0\":\"\"";
  for (int i = 1; i < 65536; ++i) entries += ",\"" + std::to_string(i) + "\":\"\"";
  auto file = SafetensorsFile::from_bytes(image(R"({"__metadata__":{)" + entries + "}}", 0), "ok");
  EXPECT_EQ(file.metadata().size(), 65536u);
}

TEST(SafetensorsValidation, KeysGivenTwiceAreRefusedWhereverTheyAre) {
  expect_format_error(image(R"({"__metadata__":{"a":"1","a":"2"}})", 0), {"header: invalid JSON at byte 25", "duplicate key \"a\""});
  expect_format_error(image(R"({"__metadata__":{},"__metadata__":{}})", 0), {"duplicate key \"__metadata__\""});
  expect_format_error(image(R"({"w":{"dtype":"F32","dtype":"F16","shape":[1],"data_offsets":[0,4]}})", 4),
                      {"duplicate key \"dtype\""});
  expect_format_error(image(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4],"shape":[1]}})", 4),
                      {"duplicate key \"shape\""});
}

TEST(SafetensorsValidation, MembersBesidesTheThreeAreIgnoredButChecked) {
  auto file = SafetensorsFile::from_bytes(
      image(R"({"w":{"note":{"x":[1,{"y":null}]},"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", 4), "ok");
  EXPECT_EQ(file.info("w").shape, (std::vector<std::int64_t>{1}));
  expect_format_error(image(R"({"w":{"note":[1,],"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", 4),
                      {"header: invalid JSON at byte", "unexpected character"});
}

/// GPT-2 small's tensors as Hugging Face's gpt2/model.safetensors names and shapes them (F32,
/// header order), with its metadata.
std::string gpt2_header(std::uint64_t& data_bytes) {
  std::string header = R"({"__metadata__":{"format":"pt"})";
  data_bytes = 0;
  auto add = [&](const std::string& name, std::initializer_list<std::uint64_t> shape) {
    std::uint64_t bytes = 4;
    std::string dims;
    for (std::uint64_t d : shape) dims += (dims.empty() ? "" : ",") + std::to_string(d), bytes *= d;
    header += ",\"" + name + R"(":{"dtype":"F32","shape":[)" + dims + R"(],"data_offsets":[)" +
              std::to_string(data_bytes) + "," + std::to_string(data_bytes + bytes) + "]}";
    data_bytes += bytes;
  };
  for (int layer = 0; layer < 12; ++layer) {
    const std::string h = "h." + std::to_string(layer) + ".";
    add(h + "attn.bias", {1, 1, 1024, 1024});
    add(h + "attn.c_attn.bias", {2304}), add(h + "attn.c_attn.weight", {768, 2304});
    add(h + "attn.c_proj.bias", {768}), add(h + "attn.c_proj.weight", {768, 768});
    add(h + "ln_1.bias", {768}), add(h + "ln_1.weight", {768});
    add(h + "ln_2.bias", {768}), add(h + "ln_2.weight", {768});
    add(h + "mlp.c_fc.bias", {3072}), add(h + "mlp.c_fc.weight", {768, 3072});
    add(h + "mlp.c_proj.bias", {768}), add(h + "mlp.c_proj.weight", {3072, 768});
  }
  add("ln_f.bias", {768}), add("ln_f.weight", {768});
  add("wpe.weight", {1024, 768}), add("wte.weight", {50257, 768});
  return header + "}";
}

TEST(SafetensorsValidation, AGpt2SmallHeaderStillParses) {
  // The real file's 548 MB of weights as a hole in a sparse file: only the header is read.
  std::uint64_t data_bytes = 0;
  const std::string header = gpt2_header(data_bytes);
  const auto path = testing_util::scratch_dir() / "model.safetensors";
  testing_util::spit(path, image(header, 0));
  std::filesystem::resize_file(path, 8 + header.size() + data_bytes);
  auto file = SafetensorsFile::open(path);
  EXPECT_EQ(file.tensors().size(), 160u);
  EXPECT_EQ(file.metadata().at("format"), "pt");
  EXPECT_EQ(file.tensors().front().name, "h.0.attn.bias") << "header order kept";
  EXPECT_EQ(file.info("wte.weight").shape, (std::vector<std::int64_t>{50257, 768}));
  EXPECT_EQ(file.info("h.11.mlp.c_proj.weight").shape, (std::vector<std::int64_t>{3072, 768}));
  EXPECT_EQ(file.info("wte.weight").end, data_bytes);
  EXPECT_EQ(file.raw_bytes("ln_f.bias").size(), 768u * 4);
  EXPECT_EQ(file.find("h.12.ln_1.bias"), nullptr);
}

TEST(SafetensorsValidation, OverlappingOffsets) {
  expect_format_error(image(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})", 12),
                      {"tensor \"b\"", "overlap those of \"a\""});
}

TEST(SafetensorsValidation, GapsAndTrailingBytes) {
  expect_format_error(image(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", 8),
                      {"tensor \"a\"", "leaves a gap", "begins at 4"});
  expect_format_error(image(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", 6),
                      {"2 bytes after the last tensor"});
}

TEST(SafetensorsValidation, OffsetsOutOfTheFile) {
  expect_format_error(image(R"({"a":{"dtype":"U8","shape":[1],"data_offsets":[18446744073709551614,18446744073709551615]}})", 1),
                      {"tensor \"a\"", "past the end of the data section (1 bytes)"});
  expect_format_error(image(R"({"a":{"dtype":"U8","shape":[1],"data_offsets":[0,18446744073709551616]}})", 1),
                      {"not a non-negative 64-bit integer"});
}

TEST(SafetensorsValidation, EmptyFileOnDiskIsAFormatError) {
  const auto path = testing_util::scratch_dir() / "empty.safetensors";
  testing_util::spit(path, "");
  expect_error<FormatError>([&] { SafetensorsFile::open(path); }, {"empty.safetensors", "0 bytes"});
}

TEST(SafetensorsValidation, FifoIsRejectedWithoutBlocking) {
  const auto path = testing_util::scratch_dir() / "fifo.safetensors";
  ASSERT_EQ(::mkfifo(path.c_str(), 0600), 0);
  expect_error<IoError>([&] { SafetensorsFile::open(path); }, {"fifo.safetensors", "not a regular file"});
}

}  // namespace
}  // namespace cannl::io
