// Lexer and recursive-descent parser for the extended einsum notation (semantics-frontend.md
// 2.1-2.2) with the 0.8 rule that an omitted row reads as the context ellipsis of its kind.
// Strided and convolution axes (2.7) and concatenations with label or integer parts (2.8).

#include <cctype>
#include <set>

#include "cannl/shape/einsum_spec.h"
#include "cannl/support/error.h"

namespace cannl::shape {
namespace {

enum class Tok { Ident, Int, Underscore, Bar, Arrow, FatArrow, Semi, Ellipsis, DotDot, Comma,
                 Star, Plus, Caret, Eq, Lt, Unsupported, End };

struct Token {
  Tok kind = Tok::End;
  std::string text;
  int pos = 0;
};

[[noreturn]] void fail_at(std::string_view spec, int pos, const std::string& what,
                          const std::string& hint = "") {
  throw EinsumSyntaxError(what + " at position " + std::to_string(pos) + " in einsum spec:\n" +
                          caret_excerpt(spec, pos) + (hint.empty() ? "" : "\n" + hint));
}

std::string describe_char(char c) {
  const auto u = static_cast<unsigned char>(c);
  if (std::isprint(u)) return std::string("'") + c + "'";
  static const char* hex = "0123456789abcdef";
  return std::string("byte 0x") + hex[u >> 4] + hex[u & 15];
}

bool is_letter(char c) { return std::isalpha(static_cast<unsigned char>(c)) != 0; }
bool is_digit(char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; }

/// Splits the spec into tokens; single-char mode makes every letter its own identifier.
class Lexer {
 public:
  Lexer(std::string_view spec, bool multichar) : spec_(spec), multichar_(multichar) {}

  std::vector<Token> run() {
    std::vector<Token> out;
    while (true) {
      while (at_ < spec_.size() && std::isspace(static_cast<unsigned char>(spec_[at_]))) ++at_;
      if (at_ >= spec_.size()) break;
      out.push_back(next());
    }
    out.push_back({Tok::End, "end of spec", static_cast<int>(spec_.size())});
    return out;
  }

 private:
  Token next() {
    const int pos = static_cast<int>(at_);
    const char c = spec_[at_];
    const char n = at_ + 1 < spec_.size() ? spec_[at_ + 1] : '\0';
    if (c == '|') return single(Tok::Bar, pos);
    if (c == ';') return single(Tok::Semi, pos);
    if (c == ',') return single(Tok::Comma, pos);
    if (c == '-' && n == '>') return pair(Tok::Arrow, pos);
    if (c == '=' && n == '>') return pair(Tok::FatArrow, pos);
    if (c == '.') return dots(pos);
    if (is_digit(c)) return integer(pos);
    if (is_letter(c)) return identifier(pos);
    if (c == '_') return single(Tok::Underscore, pos);
    if (c == '*') return single(Tok::Star, pos);
    if (c == '+') return single(Tok::Plus, pos);
    if (c == '^') return single(Tok::Caret, pos);
    if (c == '<') return single(Tok::Lt, pos);
    if (c == '=') return single(Tok::Eq, pos);
    if (c == '&') return single(Tok::Unsupported, pos);
    if (c == '-') fail_at(spec_, pos, "unexpected '-' (did you mean '->'?)");
    fail_at(spec_, pos, "unexpected character " + describe_char(c));
  }
  Token single(Tok kind, int pos) {
    ++at_;
    return {kind, std::string(1, spec_[pos]), pos};
  }
  Token pair(Tok kind, int pos) {
    at_ += 2;
    return {kind, std::string(spec_.substr(pos, 2)), pos};
  }
  Token dots(int pos) {
    std::size_t end = at_;
    while (end < spec_.size() && spec_[end] == '.') ++end;
    const auto count = end - at_;
    at_ = end;
    if (count == 3) return {Tok::Ellipsis, "...", pos};
    if (count == 2) return {Tok::DotDot, "..", pos};
    fail_at(spec_, pos, "unexpected '" + std::string(count, '.') + "' (use '...' or '..name..')");
  }
  Token integer(int pos) {
    std::size_t end = at_;
    while (end < spec_.size() && is_digit(spec_[end])) ++end;
    if (end - at_ > 15) fail_at(spec_, pos, "fixed index too large");
    Token t{Tok::Int, std::string(spec_.substr(at_, end - at_)), pos};
    at_ = end;
    return t;
  }
  Token identifier(int pos) {
    std::size_t end = at_ + 1;
    if (multichar_)
      while (end < spec_.size() && (is_letter(spec_[end]) || is_digit(spec_[end]) || spec_[end] == '_'))
        ++end;
    Token t{Tok::Ident, std::string(spec_.substr(at_, end - at_)), pos};
    at_ = end;
    return t;
  }

  std::string_view spec_;
  bool multichar_;
  std::size_t at_ = 0;
};

bool ends_row(Tok t) {
  return t == Tok::Bar || t == Tok::Arrow || t == Tok::FatArrow || t == Tok::Semi || t == Tok::End;
}

/// Recursive descent over the token list; every error points at the offending token.
class Parser {
 public:
  Parser(std::string_view spec, std::vector<Token> tokens, bool multichar, bool labels = false)
      : spec_(spec), tokens_(std::move(tokens)), multichar_(multichar), labels_(labels) {}

  /// A labels spec: exactly one slot.
  SlotSpec run_labels() {
    SlotSpec s = slot();
    if (peek().kind != Tok::End) unexpected(peek(), "a labels spec describes one shape");
    return s;
  }

  EinsumSpec run() {
    EinsumSpec out;
    out.text = std::string(spec_);
    out.multichar = multichar_;
    out.rhs.push_back(slot());
    while (peek().kind == Tok::Semi) {
      ++at_;
      out.rhs.push_back(slot());
    }
    if (peek().kind != Tok::FatArrow) unexpected(peek(), "expected '=>' or ';'");
    ++at_;
    out.lhs = slot();
    if (peek().kind != Tok::End) unexpected(peek(), "");
    return out;
  }

 private:
  const Token& peek() const { return tokens_[at_]; }
  const Token& peek2() const { return tokens_[std::min(at_ + 1, tokens_.size() - 1)]; }
  const Token& expect(Tok kind, const std::string& hint) {
    if (peek().kind != kind) unexpected(peek(), hint);
    return tokens_[at_++];
  }
  std::int64_t integer_token() { return std::stoll(expect(Tok::Int, "expected an integer").text); }

  [[noreturn]] void unexpected(const Token& t, const std::string& hint) const {
    const std::string what =
        t.kind == Tok::End ? "unexpected end of spec" : "unexpected '" + t.text + "'";
    fail_at(spec_, t.pos, what, hint);
  }

  static RowSpec omitted_row(int pos) {
    RowSpec r;
    r.has_ellipsis = r.is_context = r.omitted = true;
    r.pos = pos;
    return r;
  }

  SlotSpec slot() {
    SlotSpec s;
    s.pos = peek().pos;
    RowSpec first = row();
    if (peek().kind == Tok::Bar) {
      ++at_;
      RowSpec second = row();
      s.batch = std::move(first);
      if (peek().kind == Tok::Arrow) {
        ++at_;
        s.input = std::move(second);
        s.output = row();
      } else {
        s.input = omitted_row(s.pos);
        s.output = std::move(second);
      }
    } else if (peek().kind == Tok::Arrow) {
      ++at_;
      s.batch = omitted_row(s.pos);
      s.input = std::move(first);
      s.output = row();
    } else {
      s.batch = omitted_row(s.pos);
      s.input = omitted_row(s.pos);
      s.output = std::move(first);
    }
    return s;
  }

  RowSpec row() {
    RowSpec r;
    r.pos = peek().pos;
    bool need_separator = false;  // multichar mode: two axes need a comma between them
    bool after_comma = false;
    while (!ends_row(peek().kind)) {
      const Token& t = peek();
      if (t.kind == Tok::Comma) {
        if (!multichar_ || after_comma || (r.beg.empty() && r.dims.empty() && !r.has_ellipsis))
          unexpected(t, "");
        ++at_;
        need_separator = false;
        after_comma = true;
        continue;
      }
      after_comma = false;
      if (t.kind == Tok::Ellipsis || t.kind == Tok::DotDot) {
        ellipsis(r);
        need_separator = false;
        continue;
      }
      if (multichar_ && need_separator) unexpected(t, "expected ',' between axes");
      (r.has_ellipsis ? r.dims : r.beg).push_back(axis());
      need_separator = true;
    }
    if (!r.has_ellipsis) std::swap(r.beg, r.dims);  // without an ellipsis all axes are trailing
    return r;
  }

  void ellipsis(RowSpec& r) {
    const Token& t = peek();
    if (r.has_ellipsis) unexpected(t, "only one ellipsis per row");
    r.has_ellipsis = true;
    ++at_;
    if (t.kind == Tok::Ellipsis) {
      r.is_context = true;
      return;
    }
    if (peek().kind != Tok::Ident) unexpected(peek(), "expected a row variable name after '..'");
    r.var_name = peek().text;
    ++at_;
    if (multichar_ && peek().kind == Tok::Comma) ++at_;
    if (peek().kind != Tok::DotDot) unexpected(peek(), "expected '..' closing the row variable");
    ++at_;
  }

  /// A labels spec axis: `3` (a size), `rgb=3` (a size with a named basis), `i` or `_`.
  AxisSpec labels_axis() {
    const Token& t = peek();
    AxisSpec a;
    a.pos = t.pos;
    const Tok n = peek2().kind;
    if (n == Tok::Star || n == Tok::Caret || n == Tok::Lt || n == Tok::Plus ||
        (t.kind == Tok::Ident && n == Tok::Eq && tokens_[at_ + 2].kind != Tok::Int))
      fail_at(spec_, t.pos,
              "strided, convolution and concatenation axes are not allowed in a labels spec",
              "a labels spec gives sizes (3), named sizes (rgb=3), labels and row variables");
    if (t.kind == Tok::Int) return fixed_axis(a);
    if (t.kind != Tok::Ident && t.kind != Tok::Underscore) unexpected(t, "");
    a.label = t.text;
    ++at_;
    if (peek().kind != Tok::Eq) return a;
    ++at_;  // '='
    a.basis = std::move(a.label);
    a.label.clear();
    return fixed_axis(a);
  }

  /// An integer axis: a fixed index in an einsum spec, a size in a labels spec.
  AxisSpec fixed_axis(AxisSpec a) {
    a.kind = AxisSpec::Kind::Fixed;
    a.index = integer_token();
    return a;
  }

  AxisSpec axis() {
    if (labels_) return labels_axis();
    const Token& t = peek();
    AxisSpec a;
    a.pos = t.pos;
    if (t.kind == Tok::Int && peek2().kind == Tok::Star) {
      a.stride = positive(integer_token(), t.pos, "stride");
      ++at_;  // '*'
      a.label = expect(Tok::Ident, "expected the iterated label after the stride").text;
      return affine(a);
    }
    if ((t.kind == Tok::Int || t.kind == Tok::Ident) && peek2().kind == Tok::Caret) return concat(a);
    if (t.kind == Tok::Int) return fixed_axis(a);
    if (t.kind != Tok::Ident && t.kind != Tok::Underscore) unexpected(t, "");
    a.label = t.text;
    ++at_;
    const Tok n = peek().kind;
    if (t.kind == Tok::Ident && (n == Tok::Eq || n == Tok::Lt || n == Tok::Plus)) return affine(a);
    if (n == Tok::Star) unexpected(peek(), "a coefficient must be an integer written before '*'");
    return a;
  }

  std::int64_t positive(std::int64_t v, int pos, const char* what) const {
    if (v < 1) fail_at(spec_, pos, std::string(what) + " must be at least 1");
    return v;
  }

  /// After `[stride*]over`: `+offset` (strided), `=+[off+][dil*]kernel` or `<+...` (convolution).
  AxisSpec affine(AxisSpec a) {
    a.kind = AxisSpec::Kind::Affine;
    const Tok n = peek().kind;
    if (n == Tok::Plus && peek2().kind == Tok::Int && tokens_[at_ + 2].kind != Tok::Star &&
        tokens_[at_ + 2].kind != Tok::Plus) {
      ++at_;
      const int pos = peek().pos;
      a.offset = integer_token();
      if (a.offset >= a.stride)
        fail_at(spec_, pos, "a stride offset must be smaller than the stride " + std::to_string(a.stride));
      return a;
    }
    if (n == Tok::Plus)
      fail_at(spec_, peek().pos,
              "use_padding must be specified in convolution spec (use = for true, < for false)");
    if (n != Tok::Eq && n != Tok::Lt) {
      if (a.stride == 1) unexpected(peek(), "");
      return a;  // plain strided iteration `2*o`
    }
    a.use_padding = n == Tok::Eq;
    ++at_;
    expect(Tok::Plus, "expected '+' after the padding marker ('=+' or '<+')");
    if (peek().kind == Tok::Int && peek2().kind == Tok::Plus) {
      // As for a plain strided axis (0 <= offset < stride): sizes ignore the offset, so a
      // larger one would read past the operand's end.
      const int pos = peek().pos;
      a.offset = integer_token();
      if (a.offset >= a.stride)
        fail_at(spec_, pos, "a stride offset must be smaller than the stride " + std::to_string(a.stride));
      ++at_;
    }
    if (peek().kind == Tok::Int) {
      a.dilation = positive(integer_token(), peek().pos, "dilation");
      expect(Tok::Star, "expected '*' after the dilation");
    }
    a.kernel = expect(Tok::Ident, "expected the kernel label").text;
    return a;
  }

  /// `a^b^c` with label or integer parts.
  AxisSpec concat(AxisSpec a) {
    a.kind = AxisSpec::Kind::Concat;
    while (true) {
      const Token& t = peek();
      ConcatPart part;
      part.pos = t.pos;
      if (t.kind == Tok::Int) part.size = integer_token();
      else part.label = expect(Tok::Ident, "expected a label or an integer in a concatenation").text;
      a.parts.push_back(std::move(part));
      if (peek().kind != Tok::Caret) break;
      ++at_;
    }
    return a;
  }

  std::string_view spec_;
  std::vector<Token> tokens_;
  bool multichar_;
  bool labels_;
  std::size_t at_ = 0;
};

void collect_names(const RowSpec& r, std::set<std::string>& labels,
                   std::vector<std::pair<std::string, int>>& row_vars) {
  for (const auto* axes : {&r.beg, &r.dims})
    for (const auto& a : *axes) {
      if (a.kind == AxisSpec::Kind::Label || a.kind == AxisSpec::Kind::Affine) labels.insert(a.label);
      if (!a.kernel.empty()) labels.insert(a.kernel);
      for (const auto& p : a.parts)
        if (!p.label.empty()) labels.insert(p.label);
    }
  if (r.has_ellipsis && !r.is_context) row_vars.emplace_back(r.var_name, r.pos);
}

/// A name may not be both a dimension label and a row variable (semantics 2.2).
void check_name_clashes(std::string_view text, const std::vector<const SlotSpec*>& slots) {
  std::set<std::string> labels;
  std::vector<std::pair<std::string, int>> row_vars;
  for (const SlotSpec* slot : slots)
    for (const auto* r : {&slot->batch, &slot->input, &slot->output}) collect_names(*r, labels, row_vars);
  for (const auto& [name, pos] : row_vars)
    if (labels.count(name))
      fail_at(text, pos, "Name '" + name + "' is used as both a dimension variable and a row variable");
}

}  // namespace

bool has_concatenation(std::string_view spec) { return spec.find('^') != std::string_view::npos; }

bool is_multichar(std::string_view spec) {
  for (std::size_t i = 0; i < spec.size(); ++i) {
    const char c = spec[i];
    if (c == ',' || c == '*' || c == '+' || c == '^' || c == '&' || c == '<') return true;
    if (c == '=' && (i + 1 >= spec.size() || spec[i + 1] != '>')) return true;
  }
  return false;
}

std::string caret_excerpt(std::string_view spec, int pos) {
  std::string line(spec);
  for (auto& c : line)
    if (c == '\n' || c == '\t' || c == '\r') c = ' ';
  return "  " + line + "\n  " + std::string(static_cast<std::size_t>(pos < 0 ? 0 : pos), ' ') + "^";
}

EinsumSpec parse_einsum(std::string_view spec) {
  const bool multichar = is_multichar(spec);
  Parser parser(spec, Lexer(spec, multichar).run(), multichar);
  EinsumSpec out = parser.run();
  std::vector<const SlotSpec*> slots{&out.lhs};
  for (const auto& slot : out.rhs) slots.push_back(&slot);
  check_name_clashes(out.text, slots);
  return out;
}

SlotSpec parse_labels_spec(std::string_view spec) {
  const bool multichar = is_multichar(spec);
  Parser parser(spec, Lexer(spec, multichar).run(), multichar, /*labels=*/true);
  SlotSpec out = parser.run_labels();
  check_name_clashes(spec, {&out});
  return out;
}

}  // namespace cannl::shape
