// Configuration resolution: default < cannl_config file < CANNL_* environment < command-line
// flags < programmatic overrides. The file and environment are read lazily, once, under a mutex;
// reload() forgets them so tests can chdir/setenv and read again.
#include "cannl/support/config.h"

#include <array>
#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <optional>

#include "cannl/support/error.h"
#include "support/config_sources.h"

namespace cannl::config {
namespace {

using detail::Setting;
using detail::SettingMap;

constexpr std::array kKeys = {
#define CANNL_CONFIG_KEY(name, default_value, description) \
  KeyInfo{#name, default_value, description},
#include "support/config_keys.def"
#undef CANNL_CONFIG_KEY
};

/// All configuration state; one instance, guarded by `mutex`.
struct State {
  std::mutex mutex;
  bool loaded = false;
  SettingMap file;
  SettingMap environment;
  SettingMap flags;
  SettingMap overrides;
};

State& state() {
  static State instance;
  return instance;
}

/// Reads the file and environment if not done yet. Caller holds the mutex. A throwing read leaves
/// `loaded` false, so the next call reports the same error again instead of silently defaulting.
void ensure_loaded(State& s) {
  if (s.loaded) return;
  std::error_code error;
  std::filesystem::path cwd = std::filesystem::current_path(error);
  SettingMap file;
  if (!error) {
    if (auto path = detail::find_config_file(cwd)) file = detail::read_config_file(*path);
  }
  s.file = std::move(file);
  s.environment = detail::read_environment();
  s.loaded = true;
}

/// The declared key spelled `key` in any accepted spelling ("cc-compiler", "CANNL_DEBUG").
const KeyInfo& key_info(std::string_view key) {
  std::string name = detail::normalize_key(key);
  for (const KeyInfo& info : kKeys) {
    if (info.name == name) return info;
  }
  throw ConfigError("unknown config key '" + std::string(key) + "'" +
                    detail::closest_key_hint(name));
}

/// The winning value of a known key and its source, highest priority first.
Setting resolve(std::string_view key) {
  const KeyInfo& info = key_info(key);
  key = info.name;
  State& s = state();
  std::lock_guard lock(s.mutex);
  ensure_loaded(s);
  for (const SettingMap* layer : {&s.overrides, &s.flags, &s.environment, &s.file}) {
    if (auto it = layer->find(key); it != layer->end()) return it->second;
  }
  return Setting{std::string(info.default_value), "default"};
}

[[noreturn]] void throw_bad_value(std::string_view key, const Setting& setting,
                                  std::string_view expected) {
  throw ConfigError("config key '" + std::string(key) + "' = '" + setting.value + "' (from " +
                    setting.source + "): expected " + std::string(expected));
}

std::string lowercase(std::string_view text) {
  std::string out(text);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

}  // namespace

std::span<const KeyInfo> known_keys() { return kKeys; }

std::string get(std::string_view key) { return resolve(key).value; }

std::string source_of(std::string_view key) { return resolve(key).source; }

bool get_bool(std::string_view key) {
  Setting setting = resolve(key);
  std::string value = lowercase(detail::trim(setting.value));
  if (value == "true" || value == "1" || value == "yes" || value == "on") return true;
  if (value == "false" || value == "0" || value == "no" || value == "off") return false;
  throw_bad_value(key, setting, "a boolean (true/false); also accepted: 1/0, yes/no, on/off");
}

std::int64_t get_int(std::string_view key) {
  Setting setting = resolve(key);
  std::string_view text = detail::trim(setting.value);
  if (!text.empty() && text.front() == '+') text.remove_prefix(1);
  std::int64_t value = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error == std::errc::result_out_of_range) {
    throw_bad_value(key, setting, "an integer in the 64-bit range");
  }
  if (error != std::errc() || end != text.data() + text.size() || text.empty()) {
    throw_bad_value(key, setting, "an integer (e.g. 0, 3, -1)");
  }
  return value;
}

std::int64_t get_int_in(std::string_view key, std::int64_t min, std::int64_t max) {
  const std::int64_t value = get_int(key);
  if (value < min || value > max)
    throw_bad_value(key, resolve(key), "an integer from " + std::to_string(min) + " to " + std::to_string(max));
  return value;
}

namespace detail {
std::string get_one_of(std::string_view key, std::span<const std::string_view> choices) {
  const Setting setting = resolve(key);
  const std::string value = lowercase(trim(setting.value));
  for (std::string_view choice : choices) {
    if (value == lowercase(choice)) return std::string(choice);
  }
  std::string expected;
  for (std::size_t i = 0; i < choices.size(); ++i) {
    if (i > 0) expected += i + 1 == choices.size() ? " or " : ", ";
    expected += choices[i];
  }
  throw_bad_value(key, setting, expected);
}
}  // namespace detail

std::string get_one_of(std::string_view key, std::initializer_list<std::string_view> choices) {
  return detail::get_one_of(key, std::span<const std::string_view>(choices.begin(), choices.size()));
}

double get_double(std::string_view key) {
  Setting setting = resolve(key);
  std::string text(detail::trim(setting.value));
  // strtod rather than from_chars: it accepts a leading '+' and is locale-independent enough for
  // the "C" locale cannl never changes.
  char* end = nullptr;
  errno = 0;
  double value = std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size()) {
    throw_bad_value(key, setting, "a number (e.g. 0.5, 1e-3)");
  }
  if (errno == ERANGE && (value > 1.0 || value < -1.0)) {
    throw_bad_value(key, setting, "a number within the range of a double");
  }
  return value;
}

std::vector<std::string> parse_command_line(int argc, const char* const* argv) {
  std::vector<std::string> rest;
  SettingMap parsed;
  bool options_ended = false;
  for (int i = 0; i < argc; ++i) {
    std::string_view arg(argv[i] != nullptr ? argv[i] : "");
    if (arg == "--") options_ended = true;
    std::size_t equals = arg.find('=');
    if (i == 0 || options_ended || !arg.starts_with("--") || equals == std::string_view::npos) {
      rest.emplace_back(arg);
      continue;
    }
    std::string key = detail::normalize_key(arg.substr(2, equals - 2));
    std::string flag(arg.substr(0, equals));
    if (!detail::is_known_key(key)) {
      detail::warn_unknown_key(key, "flag " + flag);
      rest.emplace_back(arg);
      continue;
    }
    parsed[key] = Setting{std::string(detail::trim(arg.substr(equals + 1))), "flag " + flag};
  }
  State& s = state();
  std::lock_guard lock(s.mutex);
  for (auto& [key, setting] : parsed) {
    // An empty value means unset: a lower-priority source decides.
    if (setting.value.empty()) {
      s.flags.erase(key);
    } else {
      s.flags[key] = std::move(setting);
    }
  }
  return rest;
}

void clear_command_line() {
  State& s = state();
  std::lock_guard lock(s.mutex);
  s.flags.clear();
}

void set_override(std::string_view key, std::string_view value) {
  std::string name(key_info(key).name);
  State& s = state();
  std::lock_guard lock(s.mutex);
  if (value.empty()) {
    s.overrides.erase(name);
  } else {
    s.overrides[name] = Setting{std::string(value), "override"};
  }
}

void clear_overrides() {
  State& s = state();
  std::lock_guard lock(s.mutex);
  s.overrides.clear();
}

void reload() {
  State& s = state();
  std::lock_guard lock(s.mutex);
  s.loaded = false;
  s.file.clear();
  s.environment.clear();
}

}  // namespace cannl::config
