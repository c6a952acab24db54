// The tuner's schedule cache (see schedule_cache.h).
//
// An entry, one file:
//   cannl-schedule-cache 2
//   key <64 hex>
//   label <the winner's label>
//   times <baseline_ms> <default_ms> <tuned_ms>
//   search complete|cut-short <budget_s> <rounds> <beam_width> <sweep_target 0|1>
//   target <mr nv kc nc mc min_tile_work threads chunks>
//   placement default|materialize-all
//   <the trace: schedule::print_trace's lines>
//   sha256 <64 hex of every line above, newlines included>
#include "cannl/tune/schedule_cache.h"

#include <cstdio>
#include <sstream>

#include "cannl/support/config.h"
#include "cannl/support/error.h"
#include "cannl/support/files.h"
#include "cannl/support/hash.h"
#include "cannl/support/log.h"
#include "tune/target_fields.h"

namespace cannl::tune {

namespace {

namespace fs = std::filesystem;

// Version 2 added the search line; the header is part of the key, so entries of version 1 are
// never looked up again.
constexpr std::string_view kHeader = "cannl-schedule-cache 2";
constexpr std::string_view kChecksum = "sha256 ";

std::string format_ms(double ms) {
  char text[64];
  std::snprintf(text, sizeof text, "%.6g", ms);
  return text;
}

std::string search_width_text(const SearchWidth& w) {
  return std::string(w.complete ? "complete" : "cut-short") + " " + format_ms(w.budget_s) + " " +
         std::to_string(w.rounds) + " " + std::to_string(w.beam_width) + " " + (w.sweep_target ? "1" : "0");
}

std::optional<SearchWidth> parse_search_width(const std::string& text) {
  std::istringstream in(text);
  std::string end;
  int sweep = -1;
  SearchWidth w;
  if (!(in >> end >> w.budget_s >> w.rounds >> w.beam_width >> sweep)) return std::nullopt;
  if ((end != "complete" && end != "cut-short") || (sweep != 0 && sweep != 1)) return std::nullopt;
  w.complete = end == "complete";
  w.sweep_target = sweep == 1;
  return w;
}

/// The entry's fields, or the reason the text is not a valid entry for `key`.
struct Parsed {
  std::optional<CachedSchedule> entry;
  std::string problem;
};

Parsed parse_entry(const std::string& text, const std::string& key, const ir::Target& base) {
  const auto mark = text.rfind(kChecksum);
  if (mark == std::string::npos || (mark > 0 && text[mark - 1] != '\n'))
    return {std::nullopt, "it has no checksum line (torn or not a cache entry)"};
  std::string sum = text.substr(mark + kChecksum.size());
  while (!sum.empty() && (sum.back() == '\n' || sum.back() == '\r')) sum.pop_back();
  const std::string body = text.substr(0, mark);
  if (sum != sha256_hex(body)) return {std::nullopt, "its checksum does not match its contents (damaged or edited)"};

  std::istringstream in(body);
  std::string line;
  auto next = [&](std::string_view word) -> std::optional<std::string> {
    if (!std::getline(in, line) || line.rfind(std::string(word) + " ", 0) != 0) return std::nullopt;
    return line.substr(word.size() + 1);
  };
  if (!std::getline(in, line) || line != kHeader) return {std::nullopt, "its first line is not '" + std::string(kHeader) + "'"};
  CachedSchedule e;
  const auto k = next("key");
  if (!k) return {std::nullopt, "it has no key line"};
  if (*k != key) return {std::nullopt, "it holds the entry of another key (" + k->substr(0, 12) + "...)"};
  e.key = *k;
  const auto label = next("label");
  const auto times = next("times");
  const auto search = next("search");
  const auto fields = next("target");
  const auto placement = next("placement");
  if (!label || !times || !search || !fields || !placement)
    return {std::nullopt, "a label, times, search, target or placement line is missing"};
  const auto width = parse_search_width(*search);
  if (!width) return {std::nullopt, "its search line is malformed"};
  e.search = *width;
  if (*placement != "default" && *placement != "materialize-all")
    return {std::nullopt, "its placement line is malformed"};
  e.materialize_all = *placement == "materialize-all";
  e.label = *label;
  std::istringstream t(*times);
  if (!(t >> e.baseline_ms >> e.default_ms >> e.tuned_ms)) return {std::nullopt, "its times line is malformed"};
  const auto target = with_target_fields(base, *fields);
  if (!target) return {std::nullopt, "its target line is malformed"};
  e.target = *target;
  std::string trace((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  try {
    e.trace = schedule::parse_trace(trace);
  } catch (const ScheduleError& error) {
    return {std::nullopt, std::string("its trace does not parse: ") + error.what()};
  }
  return {e, ""};
}

}  // namespace

bool SearchWidth::covers(const SearchWidth& asked) const {
  if (rounds < asked.rounds || beam_width < asked.beam_width || (asked.sweep_target && !sweep_target)) return false;
  // A search that ended by itself would have ended the same under a larger budget.
  return complete || budget_s >= asked.budget_s;
}

std::string schedule_cache_key(const std::string& program_digest, const ir::Target& target,
                               const std::string& backend_fingerprint, const MachineIdentity& machine) {
  // The licence the candidates were checked under.
  const char* licence = reassociation_licence_key(target);
  const std::string licences = std::string(licence) + " " + (config::get_bool(licence) ? "1" : "0");
  return sha256_hex(std::string(kHeader) + "\n" + program_digest + "\n" + full_target_text(target) + "\n" +
                    backend_fingerprint + "\n" + licences + "\ncpu " + machine.cpu_model + "\nthreads " +
                    std::to_string(machine.threads));
}

fs::path schedule_cache_dir() {
  const std::string configured = config::get("autotune_cache_dir");
  // Not created here: a tune without the cache leaves no folder behind (store_cached_schedule
  // creates it).
  return configured.empty() ? files::build_dir() / "schedule_cache" : fs::path(configured);
}

fs::path cached_schedule_path(const fs::path& dir, const std::string& key) { return dir / (key + ".schedule"); }

std::optional<CachedSchedule> load_cached_schedule(const fs::path& dir, const std::string& key, const ir::Target& base) {
  const fs::path path = cached_schedule_path(dir, key);
  std::error_code ec;
  if (!fs::exists(path, ec)) return std::nullopt;
  std::string text;
  try {
    if (!files::is_regular_file(path)) throw IoError("not a regular file");
    text = files::read_file(path);
  } catch (const IoError& e) {
    logging::warn("schedule cache entry " + path.string() + " cannot be read (" + e.what() + "); tuning again");
    return std::nullopt;
  }
  Parsed parsed = parse_entry(text, key, base);
  if (!parsed.entry)
    logging::warn("schedule cache entry " + path.string() + " is ignored: " + parsed.problem + "; tuning again");
  return parsed.entry;
}

void store_cached_schedule(const fs::path& dir, const CachedSchedule& entry) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  std::string body = std::string(kHeader) + "\nkey " + entry.key + "\nlabel " + entry.label + "\ntimes " +
                     format_ms(entry.baseline_ms) + " " + format_ms(entry.default_ms) + " " +
                     format_ms(entry.tuned_ms) + "\nsearch " + search_width_text(entry.search) + "\ntarget " + target_fields_text(entry.target) + "\nplacement " +
                     (entry.materialize_all ? "materialize-all" : "default") + "\n" +
                     schedule::print_trace(entry.trace);
  files::write_atomically(cached_schedule_path(dir, entry.key), body + std::string(kChecksum) + sha256_hex(body) + "\n");
}

}  // namespace cannl::tune
