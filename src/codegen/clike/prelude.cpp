// Selection of the prelude helpers a generated body needs (see prelude.h).
#include "codegen/clike/prelude.h"

#include <cctype>
#include <set>

#include "cannl/support/error.h"

namespace cannl::codegen {

std::vector<PreludeHelper> c_prelude_helpers() {
  std::vector<PreludeHelper> out;
  append_float_codec_helpers(out);
  append_integer_helpers(out);
  append_random_helpers(out);
  append_minmax_helpers(out);
  return out;
}

namespace {

std::set<std::string> identifiers_in(std::string_view code) {
  std::set<std::string> ids;
  std::size_t k = 0;
  while (k < code.size()) {
    const auto c = static_cast<unsigned char>(code[k]);
    if (std::isalpha(c) == 0 && c != '_') {
      // Skip numbers whole so "0x1p-24f" does not yield identifier "p".
      if (std::isdigit(c) != 0) {
        while (k < code.size() && (std::isalnum(static_cast<unsigned char>(code[k])) != 0 ||
                                   code[k] == '.' || code[k] == '_')) {
          ++k;
        }
      } else {
        ++k;
      }
      continue;
    }
    std::size_t end = k;
    while (end < code.size() &&
           (std::isalnum(static_cast<unsigned char>(code[end])) != 0 || code[end] == '_')) {
      ++end;
    }
    ids.emplace(code.substr(k, end - k));
    k = end;
  }
  return ids;
}

std::string replace_prefix(const std::string& text, std::string_view prefix) {
  std::string out;
  for (std::size_t k = 0; k < text.size(); ++k) {
    if (text.compare(k, 3, "$P ") == 0) {
      out.append(prefix);
      out.push_back(' ');
      k += 2;
    } else {
      out.push_back(text[k]);
    }
  }
  return out;
}

}  // namespace

std::string select_prelude(const std::vector<PreludeHelper>& helpers, std::string_view code,
                           std::string_view helper_prefix) {
  const std::set<std::string> used = identifiers_in(code);
  std::set<std::string> needed;
  std::vector<std::string> work;
  for (const auto& h : helpers) {
    if (used.count(h.name) != 0) work.push_back(h.name);
  }
  while (!work.empty()) {
    std::string name = work.back();
    work.pop_back();
    if (!needed.insert(name).second) continue;
    bool found = false;
    for (const auto& h : helpers) {
      if (h.name != name) continue;
      found = true;
      for (const auto& d : h.deps) work.push_back(d);
    }
    internal_check(found, [&] { return "prelude: unknown helper dependency " + name; });
  }
  std::string out;
  for (const auto& h : helpers) {
    if (needed.count(h.name) == 0) continue;
    out += replace_prefix(h.text, helper_prefix);
    out += "\n";
  }
  return out;
}

}  // namespace cannl::codegen
