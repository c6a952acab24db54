// The table-driven command-line parser of `cannl` (see options.h).
#include "options.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <sstream>

#include "cannl/support/config.h"
#include "cannl/support/error.h"

#include "cannl/support/edit_distance.h"

namespace cannl::app {
namespace {

std::string dashes_to_underscores(std::string name) {
  std::replace(name.begin(), name.end(), '-', '_');
  return name;
}

std::string lowercase(std::string text) {
  for (char& c : text)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return text;
}

/// The config key an option name spells (dashes or underscores, any case, optional cannl_).
std::optional<std::string> config_key(const std::string& name) {
  std::string key = lowercase(dashes_to_underscores(name));
  if (key.rfind("cannl_", 0) == 0) key = key.substr(6);
  for (const auto& info : config::known_keys())
    if (info.name == key) return key;
  return std::nullopt;
}


/// "; did you mean '--x'?" for the closest option or config key when one is a likely typo, else
/// the list of the command's options.
std::string closest_hint(const CommandSpec& spec, const std::string& name) {
  std::string best;
  std::size_t best_distance = std::max<std::size_t>(1, name.size() / 3) + 1;
  auto consider = [&](const std::string& candidate) {
    const std::size_t d = edit_distance(name, candidate);
    if (d < best_distance && d < candidate.size()) best_distance = d, best = candidate;
  };
  for (const auto& o : spec.options) consider(o.name);
  consider("help");
  for (const auto& info : config::known_keys()) consider(std::string(info.name));
  if (!best.empty()) return "; did you mean '--" + best + "'?";
  std::string list;
  for (const auto& o : spec.options) list += (list.empty() ? "" : ", ") + ("--" + o.name);
  return list.empty() ? "; it takes no options" : "; its options are " + list;
}

const OptionSpec* find_option(const CommandSpec& spec, const std::string& name) {
  for (const auto& o : spec.options)
    if (o.name == name) return &o;
  return nullptr;
}

std::string range_text(std::int64_t min, std::int64_t max) {
  if (max == std::numeric_limits<std::int64_t>::max()) return ">= " + std::to_string(min);
  return "between " + std::to_string(min) + " and " + std::to_string(max);
}

std::string number_text(double v) {
  std::ostringstream out;
  out << v;
  return out.str();
}

double parse_number(const OptionSpec& o, const std::string& text) {
  const std::string what = "--" + o.name;
  char* end = nullptr;
  const double v = text.empty() ? 0 : std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size() || !std::isfinite(v))
    throw RuntimeUsageError(what + " expects a finite number, got '" + text + "'");
  const bool low = o.exclusive_min ? v <= o.min_number : v < o.min_number;
  if (low || v > o.max_number)
    throw RuntimeUsageError(what + " must be " + (o.exclusive_min ? "> " : ">= ") +
                            number_text(o.min_number) + " and <= " + number_text(o.max_number) +
                            ", got " + text);
  return v;
}

/// Checks `value` against the option's type and range (throws RuntimeUsageError).
void check_value(const OptionSpec& o, const std::string& value) {
  switch (o.kind) {
    case OptionKind::Flag: return;
    case OptionKind::Int: parse_integer(value, "--" + o.name, o.min, o.max); return;
    case OptionKind::Number: parse_number(o, value); return;
    case OptionKind::Text:
      if (value.empty()) throw RuntimeUsageError("--" + o.name + " needs a non-empty value");
      return;
    case OptionKind::Choice:
      if (std::find(o.choices.begin(), o.choices.end(), value) != o.choices.end()) return;
      std::string list;
      for (const auto& c : o.choices) list += (list.empty() ? "" : ", ") + c;
      throw RuntimeUsageError("--" + o.name + " expects one of " + list + ", got '" + value + "'");
  }
}

std::string command_line(const CommandSpec& spec) { return "'cannl " + spec.name + "'"; }

struct Cursor {
  const std::vector<std::string>& args;
  std::size_t at = 0;
};

/// The value of `--name` at the cursor: inline after '=', else the next argument.
std::string take_value(Cursor& c, const std::string& name, const std::optional<std::string>& inline_value,
                       const std::string& value_name) {
  if (inline_value) return *inline_value;
  if (c.at + 1 >= c.args.size())
    throw RuntimeUsageError("--" + name + " needs a value (--" + name + " " + value_name + ")");
  // `--checkpoint --resume` forgot the value: taking the next option as it would silently drop
  // that option (and write a file named --resume).
  const std::string& next = c.args[c.at + 1];
  if (next.starts_with("--"))
    throw RuntimeUsageError("--" + name + " needs a value (--" + name + " " + value_name + "), got the option '" +
                            next + "'; a value that starts with -- goes after '=': --" + name + "=" + next);
  return c.args[++c.at];
}

/// The option `name` spells up to case and '-' versus '_', e.g. --Top_K for --top-k.
const OptionSpec* find_option_loosely(const CommandSpec& spec, const std::string& name) {
  const std::string loose = lowercase(dashes_to_underscores(name));
  for (const auto& o : spec.options)
    if (lowercase(dashes_to_underscores(o.name)) == loose) return &o;
  return nullptr;
}

void parse_option(const CommandSpec& spec, Cursor& c, ParsedArgs& out) {
  const std::string& arg = c.args[c.at];
  const std::size_t eq = arg.find('=');
  const std::string name = arg.substr(2, eq == std::string::npos ? std::string::npos : eq - 2);
  const std::optional<std::string> inline_value =
      eq == std::string::npos ? std::nullopt : std::optional<std::string>(arg.substr(eq + 1));
  if (name == "help") {
    out.help = true;
    return;
  }
  if (const OptionSpec* o = find_option(spec, name)) {
    if (o->kind == OptionKind::Flag) {
      if (inline_value) throw RuntimeUsageError("--" + name + " takes no value, got '" + arg + "'");
      out.set(name, "");
      return;
    }
    const std::string value = take_value(c, name, inline_value, o->value_name);
    check_value(*o, value);
    out.set(name, value);
    return;
  }
  // `--Seed` or `--top_k` spell an option of the command in another case or with underscores:
  // routing them to a config key of the same name would silently drop the option.
  if (const OptionSpec* o = find_option_loosely(spec, name))
    throw RuntimeUsageError("unknown option '--" + name + "' for " + command_line(spec) + "; did you mean '--" +
                            o->name + "'? (options are spelled exactly; see cannl " + spec.name + " --help)");
  if (const auto key = config_key(name)) {
    out.config_flags.emplace_back(*key, take_value(c, name, inline_value, "VALUE"));
    return;
  }
  throw RuntimeUsageError("unknown option '--" + name + "' for " + command_line(spec) +
                          closest_hint(spec, name) + " (see cannl " + spec.name + " --help)");
}

}  // namespace

std::int64_t parse_integer(const std::string& text, const std::string& what, std::int64_t min,
                           std::int64_t max) {
  std::string_view digits = text;
  if (!digits.empty() && digits.front() == '+') digits.remove_prefix(1);
  std::int64_t v = 0;
  const auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), v);
  if (error == std::errc::result_out_of_range)
    throw RuntimeUsageError(what + " must be " + range_text(min, max) + ", got " + text);
  if (digits.empty() || error != std::errc() || end != digits.data() + digits.size())
    throw RuntimeUsageError(what + " expects an integer, got '" + text + "'");
  if (v < min || v > max)
    throw RuntimeUsageError(what + " must be " + range_text(min, max) + ", got " + text);
  return v;
}

std::int64_t ParsedArgs::integer(const std::string& name, std::int64_t fallback) const {
  auto it = values_.find(name);
  return it == values_.end() ? fallback : parse_integer(it->second, "--" + name,
                                                         std::numeric_limits<std::int64_t>::min(),
                                                         std::numeric_limits<std::int64_t>::max());
}

double ParsedArgs::number(const std::string& name, double fallback) const {
  auto it = values_.find(name);
  return it == values_.end() ? fallback : std::strtod(it->second.c_str(), nullptr);
}

std::string ParsedArgs::text(const std::string& name, const std::string& fallback) const {
  auto it = values_.find(name);
  return it == values_.end() ? fallback : it->second;
}

std::optional<std::string> ParsedArgs::maybe_text(const std::string& name) const {
  auto it = values_.find(name);
  if (it == values_.end()) return std::nullopt;
  return it->second;
}

ParsedArgs parse_command(const CommandSpec& spec, const std::vector<std::string>& args) {
  ParsedArgs out;
  bool options_ended = false;
  for (Cursor c{args}; c.at < args.size(); ++c.at) {
    const std::string& arg = args[c.at];
    if (!options_ended && arg == "--") {
      options_ended = true;
    } else if (!options_ended && arg == "-h") {
      out.help = true;
    } else if (!options_ended && arg.rfind("--", 0) == 0 && arg.size() > 2) {
      parse_option(spec, c, out);
    } else {
      out.positional.push_back(arg);
    }
  }
  if (out.help) return out;
  if (out.positional.size() > spec.max_positional) {
    const std::string extra = out.positional[spec.max_positional];
    throw RuntimeUsageError("unexpected argument '" + extra + "' for " + command_line(spec) +
                            (spec.max_positional == 0 ? " (it takes options only)" : "") +
                            " (see cannl " + spec.name + " --help)");
  }
  if (out.positional.size() < spec.min_positional)
    throw RuntimeUsageError(command_line(spec) + " needs " + spec.positional_usage +
                            " (see cannl " + spec.name + " --help)");
  return out;
}

namespace {

/// An option's help may span lines; each further line starts at the help column, so the
/// option names stay the only text in the left column.
std::string indent_continuations(const std::string& help, std::size_t column) {
  std::string out;
  for (const char c : help) {
    out += c;
    if (c == '\n') out.append(column, ' ');
  }
  return out;
}

}  // namespace

std::string help_text(const CommandSpec& spec) {
  std::string usage = "usage: cannl " + spec.name + " [options]" +
                      (spec.positional_usage.empty() ? "" : " " + spec.positional_usage) + "\n" +
                      spec.summary + "\n\noptions:\n";
  for (const auto& o : spec.options) {
    std::string left = "  --" + o.name + (o.value_name.empty() ? "" : " " + o.value_name);
    if (left.size() < 26) left.resize(26, ' ');
    else left += "  ";
    usage += left + indent_continuations(o.help, 26) + "\n";
  }
  usage += "  --help                  this text\n";
  if (!spec.notes.empty()) usage += "\n" + spec.notes + "\n";
  usage += "\nAny config key (docs/config.md) can also be set with --<key>=<value>, CANNL_<KEY> or a\n"
           "cannl_config file; an option above wins over a config key of the same name.\n";
  return usage;
}

void apply_config_flags(const ParsedArgs& args) {
  if (args.config_flags.empty()) return;
  std::vector<std::string> words{"cannl"};
  for (const auto& [key, value] : args.config_flags) words.push_back("--" + key + "=" + value);
  std::vector<const char*> argv;
  for (const auto& w : words) argv.push_back(w.c_str());
  config::parse_command_line(static_cast<int>(argv.size()), argv.data());
}

}  // namespace cannl::app
