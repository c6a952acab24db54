// Reading configuration sources: the `cannl_config` file and CANNL_* environment variables, plus
// the key spelling rules and typo suggestions shared with the command-line parser.
#include "support/config_sources.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <vector>

#include "cannl/support/config.h"
#include "cannl/support/error.h"
#include "cannl/support/log.h"

extern char** environ;  // POSIX; declared here because <unistd.h> only does so with _GNU_SOURCE

#include "cannl/support/edit_distance.h"

namespace cannl::config::detail {
namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\f' || c == '\v'; }

/// A key is a non-empty run of [a-z0-9_] after normalization.
bool is_valid_key_spelling(std::string_view key) {
  if (key.empty()) return false;
  return std::all_of(key.begin(), key.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
  });
}

/// Removes a `#` comment: at the start of the line or after whitespace, so values such as
/// `-DX=a#b` keep their '#'.
std::string_view strip_comment(std::string_view line) {
  for (std::size_t i = 0; i < line.size(); ++i) {
    if (line[i] == '#' && (i == 0 || is_space(line[i - 1]))) return line.substr(0, i);
  }
  return line;
}

[[noreturn]] void throw_file_error(const std::filesystem::path& path, int line,
                                   const std::string& what) {
  throw ConfigError("config file " + path.string() + ":" + std::to_string(line) + ": " + what);
}

}  // namespace

std::string_view trim(std::string_view text) {
  while (!text.empty() && is_space(text.front())) text.remove_prefix(1);
  while (!text.empty() && is_space(text.back())) text.remove_suffix(1);
  return text;
}

std::string normalize_key(std::string_view raw) {
  std::string key(trim(raw));
  for (char& c : key) {
    c = c == '-' ? '_' : static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  if (key.starts_with("cannl_")) key.erase(0, 6);
  return key;
}

bool is_known_key(std::string_view key) {
  for (const KeyInfo& info : known_keys()) {
    if (info.name == key) return true;
  }
  return false;
}

std::string closest_key_hint(std::string_view key) {
  std::string_view best;
  std::size_t best_distance = static_cast<std::size_t>(-1);
  for (const KeyInfo& info : known_keys()) {
    std::size_t distance = edit_distance(key, info.name);
    if (distance < best_distance) {
      best_distance = distance;
      best = info.name;
    }
  }
  // Suggest only plausible typos: a third of the key's length, but always allow 2 edits.
  std::size_t budget = std::max<std::size_t>(2, key.size() / 3);
  if (best.empty() || best_distance > budget) return "";
  return "; did you mean '" + std::string(best) + "'?";
}

void warn_unknown_key(std::string_view key, std::string_view origin) {
  logging::warn("unknown config key '" + std::string(key) + "' (from " + std::string(origin) + ")" +
            closest_key_hint(key));
}

std::optional<std::filesystem::path> find_config_file(const std::filesystem::path& start) {
  std::error_code ignored;
  for (std::filesystem::path dir = start; !dir.empty(); dir = dir.parent_path()) {
    std::filesystem::path candidate = dir / "cannl_config";
    if (std::filesystem::is_regular_file(candidate, ignored)) return candidate;
    if (dir == dir.parent_path()) break;  // reached the root
  }
  return std::nullopt;
}

SettingMap read_config_file(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) {
    throw ConfigError("cannot read config file " + path.string() + ": " + std::strerror(errno));
  }
  SettingMap settings;
  std::map<std::string, int, std::less<>> first_line;
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    std::string_view content = trim(strip_comment(line));
    if (content.empty()) continue;
    std::size_t equals = content.find('=');
    std::string key = normalize_key(content.substr(0, equals == std::string_view::npos ? 0 : equals));
    if (equals == std::string_view::npos || !is_valid_key_spelling(key)) {
      throw_file_error(path, number, "malformed line '" + std::string(content) +
                                         "': expected key=value (e.g. debug=1)");
    }
    if (auto [it, inserted] = first_line.emplace(key, number); !inserted) {
      throw_file_error(path, number, "duplicate key '" + key + "' (first set on line " +
                                         std::to_string(it->second) + ")");
    }
    std::string origin = "file " + path.string() + ":" + std::to_string(number);
    if (!is_known_key(key)) {
      warn_unknown_key(key, origin);
      continue;
    }
    std::string value(trim(content.substr(equals + 1)));
    if (!value.empty()) settings[key] = Setting{value, origin};
  }
  return settings;
}

SettingMap read_environment() {
  SettingMap settings;
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    std::string_view variable(*entry);
    if (!variable.starts_with("CANNL_")) continue;
    // CANNL_TEST_* variables size the test suite's long runs; they are not config keys.
    if (variable.starts_with("CANNL_TEST_")) continue;
    std::size_t equals = variable.find('=');
    if (equals == std::string_view::npos) continue;
    std::string name(variable.substr(0, equals));
    std::string key = normalize_key(name);
    std::string origin = "environment " + name;
    if (!is_known_key(key)) {
      warn_unknown_key(key, origin);
      continue;
    }
    std::string value(trim(variable.substr(equals + 1)));
    if (!value.empty()) settings[key] = Setting{value, origin};
  }
  return settings;
}

}  // namespace cannl::config::detail

namespace cannl {

// Levenshtein distance with one row of the table: keys and option names are short.
std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      std::size_t above = row[j];
      std::size_t substitute = diagonal + (a[i - 1] == b[j - 1] ? 0 : 1);
      row[j] = std::min({above + 1, row[j - 1] + 1, substitute});
      diagonal = above;
    }
  }
  return row[b.size()];
}

}  // namespace cannl

