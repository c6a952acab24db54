// Fixture digest check, workload parsing, the measurement protocol and JSON rows.
#include "bench_harness.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "cannl/support/error.h"
#include "cannl/support/hash.h"

namespace cannl::bench {
namespace {

/// A cursor over the workload's JSON text; enough for a flat object (the fixture writer's
/// json.dumps of benchmarks/workloads/*.json).
struct Cursor {
  const std::string& s;
  std::size_t i = 0;

  void skip_space() {
    while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
  }
  [[noreturn]] void fail(const std::string& what) const {
    throw FormatError("workload metadata: " + what + " at offset " + std::to_string(i));
  }
  void expect(char c) {
    skip_space();
    if (i >= s.size() || s[i] != c) fail(std::string("expected '") + c + "'");
    ++i;
  }
  bool peek(char c) {
    skip_space();
    return i < s.size() && s[i] == c;
  }
  std::string string_value() {
    expect('"');
    std::string out;
    while (i < s.size() && s[i] != '"') {
      if (s[i] == '\\') ++i;  // workload strings hold no escapes beyond \" and \\.
      if (i < s.size()) out += s[i++];
    }
    expect('"');
    return out;
  }
  double number_value() {
    skip_space();
    std::size_t used = 0;
    double v = 0;
    try {
      v = std::stod(s.substr(i), &used);
    } catch (const std::exception&) {
      fail("expected a number");
    }
    i += used;
    return v;
  }
};

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw IoError("cannot read " + path.string());
  std::ostringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

const std::string& Workload::text(const std::string& key) const {
  auto it = strings.find(key);
  if (it == strings.end()) throw FormatError("workload: missing string field '" + key + "'");
  return it->second;
}

double Workload::number(const std::string& key) const {
  auto it = numbers.find(key);
  if (it == numbers.end()) throw FormatError("workload: missing number field '" + key + "'");
  return it->second;
}

std::string Workload::text_or(const std::string& key, const std::string& fallback) const {
  auto it = strings.find(key);
  return it == strings.end() ? fallback : it->second;
}

double Workload::number_or(const std::string& key, double fallback) const {
  auto it = numbers.find(key);
  return it == numbers.end() ? fallback : it->second;
}

std::int64_t Workload::integer(const std::string& key) const {
  return static_cast<std::int64_t>(std::llround(number(key)));
}

std::vector<std::int64_t> Workload::ints(const std::string& key) const {
  auto it = arrays.find(key);
  if (it == arrays.end()) throw FormatError("workload: missing array field '" + key + "'");
  std::vector<std::int64_t> out;
  for (double v : it->second) out.push_back(static_cast<std::int64_t>(std::llround(v)));
  return out;
}

Workload parse_workload(const std::string& json) {
  Workload w;
  Cursor c{json};
  c.expect('{');
  while (!c.peek('}')) {
    const std::string key = c.string_value();
    c.expect(':');
    if (c.peek('"')) {
      w.strings[key] = c.string_value();
    } else if (c.peek('[')) {
      c.expect('[');
      auto& values = w.arrays[key];
      while (!c.peek(']')) {
        values.push_back(c.number_value());
        if (c.peek(',')) c.expect(',');
      }
      c.expect(']');
    } else if (json.compare(c.i, 4, "true") == 0 || json.compare(c.i, 5, "false") == 0) {
      w.numbers[key] = json.compare(c.i, 4, "true") == 0 ? 1 : 0;  // booleans as 1 / 0
      c.i += w.numbers[key] != 0 ? 4 : 5;
    } else {
      w.numbers[key] = c.number_value();
    }
    if (c.peek(',')) c.expect(',');
  }
  c.expect('}');
  return w;
}

std::string checked_fixture_digest(const std::filesystem::path& fixture,
                                   const std::filesystem::path& digests) {
  const std::string bytes = read_file(fixture);
  const std::string sha = sha256_hex(bytes);
  const std::string name = fixture.filename().string();
  std::istringstream lines(read_file(digests));
  std::string listed_sha, listed_name;
  std::uint64_t listed_size = 0;
  while (lines >> listed_sha >> listed_size >> listed_name) {
    if (listed_name != name) continue;
    if (listed_sha != sha || listed_size != bytes.size())
      throw FormatError("fixture " + name + ": sha256 " + sha + " size " +
                        std::to_string(bytes.size()) + " does not match " + digests.string() +
                        " (" + listed_sha + " size " + std::to_string(listed_size) +
                        "); regenerate the fixtures");
    return sha;
  }
  throw FormatError("fixture " + name + " is not listed in " + digests.string());
}

double percentile(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) return std::nan("");
  const double pos = static_cast<double>(sorted.size() - 1) * q;
  const auto lo = static_cast<std::size_t>(std::floor(pos));
  const auto hi = static_cast<std::size_t>(std::ceil(pos));
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - static_cast<double>(lo));
}

Measurement measure(const StepCounts& steps, const std::function<void()>& compile,
                    const std::function<void(std::int64_t)>& step,
                    const std::function<double()>& sync) {
  Measurement m;
  const auto start = std::chrono::steady_clock::now();
  compile();
  step(0);
  m.losses.push_back(sync());
  m.compile_s = seconds_since(start);
  std::int64_t k = 1;
  for (; k < steps.parity; ++k) {
    step(k);
    m.losses.push_back(sync());
  }
  for (std::int64_t i = 0; i < steps.warmup; ++i, ++k) {
    step(k);
    sync();
  }
  std::vector<double> times;
  for (std::int64_t i = 0; i < steps.timed; ++i, ++k) {
    const auto t = std::chrono::steady_clock::now();
    step(k);
    sync();
    times.push_back(seconds_since(t) * 1e3);
  }
  std::sort(times.begin(), times.end());
  m.p10_ms = percentile(times, 0.1);
  m.p50_ms = percentile(times, 0.5);
  m.p90_ms = percentile(times, 0.9);
  if (steps.timed > 0) {
    const auto t = std::chrono::steady_clock::now();
    for (std::int64_t i = 0; i < steps.timed; ++i, ++k) step(k);
    sync();
    m.queued_ms = seconds_since(t) * 1e3 / static_cast<double>(steps.timed);
  }
  return m;
}

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (char ch : s) {
    if (ch == '"' || ch == '\\') {
      out += '\\';
      out += ch;
    } else if (static_cast<unsigned char>(ch) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(ch));
      out += buf;
    } else {
      out += ch;
    }
  }
  return out + "\"";
}

std::string json_number(double x) {
  if (!std::isfinite(x)) return "null";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.9g", x);
  return buf;
}

std::string json_numbers(const std::vector<double>& xs) {
  std::string out = "[";
  for (std::size_t i = 0; i < xs.size(); ++i) out += (i ? ", " : "") + json_number(xs[i]);
  return out + "]";
}

std::string json_row(const std::map<std::string, std::string>& fields) {
  std::string out = "{";
  bool first = true;
  for (const auto& [key, value] : fields) {
    out += (first ? "" : ", ") + json_string(key) + ": " + value;
    first = false;
  }
  return out + "}";
}

}  // namespace cannl::bench
