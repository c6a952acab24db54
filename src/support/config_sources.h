#pragma once
// Internal helpers of config.cpp: key spelling, the closest-key suggestion, and reading the
// `cannl_config` file and the CANNL_* environment. Not part of the public API.
//
//   auto key = normalize_key(" CANNL_CC-Compiler ");  // "cc_compiler"

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace cannl::config::detail {

/// A configured value and where it came from (for error messages and source_of()).
struct Setting {
  std::string value;
  std::string source;  // "file <path>:<line>", "environment CANNL_X", "flag --x", "override"
};

using SettingMap = std::map<std::string, Setting, std::less<>>;

/// Lowercases, trims, maps '-' to '_' and strips one optional "cannl_" prefix.
/// normalize_key("CANNL_Debug") == "debug"; normalize_key("cc-compiler") == "cc_compiler".
std::string normalize_key(std::string_view raw);

/// Strips leading and trailing ASCII whitespace: trim("  a b ") == "a b".
std::string_view trim(std::string_view text);

/// True when `key` (already normalized) is declared in config_keys.def.
bool is_known_key(std::string_view key);

/// Warns (logging::warn) that `key` is unknown, naming `origin` and the closest known key when one
/// is plausibly a typo: "unknown config key 'cc_compilr' (from ...); did you mean 'cc_compiler'?"
void warn_unknown_key(std::string_view key, std::string_view origin);

/// The message tail "; did you mean 'x'?" for the closest known key, or "" if none is close.
std::string closest_key_hint(std::string_view key);

/// The nearest `cannl_config` regular file in `start` or its ancestors, if any.
std::optional<std::filesystem::path> find_config_file(const std::filesystem::path& start);

/// Parses a config file: `key=value` lines, `#` comments, blank lines. Unknown keys warn;
/// malformed lines and duplicate keys throw ConfigError naming <path>:<line>. Empty values are
/// skipped (an empty value means unset).
SettingMap read_config_file(const std::filesystem::path& path);

/// Every non-empty CANNL_<KEY> variable of the environment; unknown keys warn.
SettingMap read_environment();

}  // namespace cannl::config::detail
