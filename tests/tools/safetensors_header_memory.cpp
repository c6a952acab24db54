// The memory a safetensors header costs to open: writes a file whose header is one of a few
// hostile shapes (or a GPT-2-like one) just within the format's byte limit, opens it, and prints
// the peak of heap bytes in use while it opened (every operator new counted) and the process's
// peak resident set. Given a most MB, it fails (exit 1) when the heap peak is above that, so
// CTest can keep the bound (label heavy: it writes a 100 MB file).
//
//   safetensors_header_memory write shapes /tmp/h.safetensors   (then, for /usr/bin/time -v:)
//   safetensors_header_memory open /tmp/h.safetensors 60       (exit 1: heap peak above 60 MB)
//
// Kinds: scalars (zero-size tensors of shape [0]), shapes (zero-size tensors of 64 zero
// dimensions), metadata (many one-character metadata entries), junk (one tensor entry with an
// unknown member of nested arrays of zeros), long_names (zero-size tensors with 200-byte names),
// gpt2 (GPT-2 small's 148 tensors).
#include <malloc.h>
#include <sys/resource.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <new>
#include <string>

#include "cannl/io/safetensors.h"
#include "cannl/support/error.h"

namespace {

std::atomic<std::size_t> g_in_use{0};
std::atomic<std::size_t> g_peak{0};

void note_allocated(void* p) {
  const std::size_t now = g_in_use += malloc_usable_size(p);
  std::size_t peak = g_peak.load();
  while (now > peak && !g_peak.compare_exchange_weak(peak, now)) {
  }
}

void* counted_new(std::size_t size) {
  void* p = std::malloc(size == 0 ? 1 : size);
  if (p == nullptr) throw std::bad_alloc();
  note_allocated(p);
  return p;
}

void counted_delete(void* p) {
  if (p == nullptr) return;
  g_in_use -= malloc_usable_size(p);
  std::free(p);
}

}  // namespace

void* operator new(std::size_t size) { return counted_new(size); }
void* operator new[](std::size_t size) { return counted_new(size); }
void operator delete(void* p) noexcept { counted_delete(p); }
void operator delete[](void* p) noexcept { counted_delete(p); }
void operator delete(void* p, std::size_t) noexcept { counted_delete(p); }
void operator delete[](void* p, std::size_t) noexcept { counted_delete(p); }

namespace {

/// A name of its own for tensor `i`: base-62 digits.
std::string short_name(std::size_t i) {
  static const char* kDigits = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
  std::string name;
  do {
    name += kDigits[i % 62];
    i /= 62;
  } while (i > 0);
  return name;
}

/// Appends `"name":entry` members until the header would pass `bytes`.
template <typename Entry>
std::string object_of(std::size_t bytes, Entry entry) {
  std::string header = "{";
  for (std::size_t i = 0;; ++i) {
    std::string member = (i ? "," : "") + ("\"" + entry(i));
    if (header.size() + member.size() + 1 > bytes) break;
    header += member;
  }
  return header + "}";
}

/// The bytes of GPT-2 small's tensors in F32.
constexpr std::uint64_t kGpt2DataBytes = 548090880;

std::string gpt2_header() {
  std::string header = R"({"__metadata__":{"format":"pt"})";
  std::uint64_t at = 0;
  auto add = [&](const std::string& name, std::initializer_list<std::uint64_t> shape) {
    std::uint64_t n = 4;
    std::string dims;
    for (std::uint64_t d : shape) dims += (dims.empty() ? "" : ",") + std::to_string(d), n *= d;
    header += ",\"" + name + R"(":{"dtype":"F32","shape":[)" + dims + R"(],"data_offsets":[)" +
              std::to_string(at) + "," + std::to_string(at + n) + "]}";
    at += n;
  };
  add("wte.weight", {50257, 768});
  add("wpe.weight", {1024, 768});
  for (int layer = 0; layer < 12; ++layer) {
    const std::string h = "h." + std::to_string(layer) + ".";
    add(h + "ln_1.weight", {768}), add(h + "ln_1.bias", {768});
    add(h + "attn.bias", {1, 1, 1024, 1024});
    add(h + "attn.c_attn.weight", {768, 2304}), add(h + "attn.c_attn.bias", {2304});
    add(h + "attn.c_proj.weight", {768, 768}), add(h + "attn.c_proj.bias", {768});
    add(h + "ln_2.weight", {768}), add(h + "ln_2.bias", {768});
    add(h + "mlp.c_fc.weight", {768, 3072}), add(h + "mlp.c_fc.bias", {3072});
    add(h + "mlp.c_proj.weight", {3072, 768}), add(h + "mlp.c_proj.bias", {768});
  }
  add("ln_f.weight", {768}), add("ln_f.bias", {768});
  if (at != kGpt2DataBytes) std::abort();
  return header + "}";
}

std::string header_of(const std::string& kind, std::size_t bytes) {
  if (kind == "scalars")
    return object_of(bytes, [](std::size_t i) { return short_name(i) + R"(":{"dtype":"F32","shape":[0],"data_offsets":[0,0]})"; });
  if (kind == "shapes") {
    std::string zeros = "0";
    for (int d = 1; d < 64; ++d) zeros += ",0";
    return object_of(bytes, [&](std::size_t i) {
      return short_name(i) + R"(":{"dtype":"F32","shape":[)" + zeros + R"(],"data_offsets":[0,0]})";
    });
  }
  if (kind == "long_names")
    return object_of(bytes, [](std::size_t i) {
      return std::string(200 - short_name(i).size(), '_') + short_name(i) +
             R"(":{"dtype":"F32","shape":[0],"data_offsets":[0,0]})";
    });
  if (kind == "metadata") {
    std::string inner = object_of(bytes - 20, [](std::size_t i) { return short_name(i) + R"(":"")"; });
    return R"({"__metadata__":)" + inner + "}";
  }
  if (kind == "junk") {
    // Arrays of 64 arrays ... of 64 zeros: within the rank limit at every level.
    std::string level = "[0";
    for (int d = 1; d < 64; ++d) level += ",0";
    level += "]";
    for (int depth = 0; depth < 3; ++depth) {
      std::string next = "[" + level;
      for (int r = 1; r < 64; ++r) next += "," + level;
      level = next + "]";
    }
    std::string rows = R"({"t":{"x":[)";
    for (int b = 0; b < 64 && rows.size() + level.size() + 8 < bytes; ++b) rows += (b ? "," : "") + level;
    return rows + "]}}";
  }
  if (kind == "gpt2") return gpt2_header();
  std::fprintf(stderr, "unknown kind '%s'\n", kind.c_str());
  std::exit(2);
}

long max_rss_kb() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss;
}

int write_file(const std::string& kind, const std::string& path, std::size_t bytes) {
  const std::string header = header_of(kind, bytes);
  const std::uint64_t length = header.size();
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(&length), 8);
  out << header;
  out.close();
  // GPT-2's weights as a hole: the data section its offsets cover, without writing 500 MB.
  if (kind == "gpt2") std::filesystem::resize_file(path, 8 + header.size() + kGpt2DataBytes);
  std::printf("%s: header of %zu bytes written to %s\n", kind.c_str(), header.size(), path.c_str());
  return out ? 0 : 1;
}

int open_file(const std::string& path, double max_peak_mb) {
  const long rss_before_kb = max_rss_kb();
  const std::size_t in_use_before = g_in_use.load();
  g_peak = in_use_before;
  const auto t0 = std::chrono::steady_clock::now();
  std::string outcome;
  try {
    auto file = cannl::io::SafetensorsFile::open(path);
    outcome = "opened: " + std::to_string(file.tensors().size()) + " tensors, " +
              std::to_string(file.metadata().size()) + " metadata entries";
  } catch (const cannl::FormatError& e) {
    outcome = std::string("FormatError: ") + std::string(e.what()).substr(0, 300);
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const double peak_mb = static_cast<double>(g_peak.load() - in_use_before) / 1e6;
  std::printf("%s\nheap peak while opening: %.1f MB; max RSS %.1f MB (%.1f MB before opening, the "
              "header's mapped pages count too); %.2f s\n",
              outcome.c_str(), peak_mb, max_rss_kb() / 1e3, rss_before_kb / 1e3, seconds);
  if (max_peak_mb > 0 && peak_mb > max_peak_mb) {
    std::printf("FAILED: the heap peak %.1f MB is above %.1f MB\n", peak_mb, max_peak_mb);
    return 1;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "write" && argc >= 4)
    return write_file(argv[2], argv[3], argc >= 5 ? std::strtoull(argv[4], nullptr, 10) : 100'000'000 - 1);
  if (mode == "open" && argc >= 3) return open_file(argv[2], argc >= 4 ? std::strtod(argv[3], nullptr) : 0);
  if (mode == "both" && argc >= 4) {
    // One process: the RSS then counts the header's text too; the heap peak is the open's alone.
    if (const int status = write_file(argv[2], argv[3], argc >= 5 ? std::strtoull(argv[4], nullptr, 10) : 100'000'000 - 1))
      return status;
    malloc_trim(0);
    const int status = open_file(argv[3], argc >= 6 ? std::strtod(argv[5], nullptr) : 0);
    std::remove(argv[3]);
    return status;
  }
  std::fprintf(stderr, "usage: %s write KIND FILE [BYTES] | open FILE [MAX_PEAK_MB] | both KIND FILE BYTES [MAX_PEAK_MB]\n", argv[0]);
  return 2;
}
