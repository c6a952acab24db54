#pragma once
// The parsed form of an extended einsum spec (semantics-frontend.md 2.1-2.6, 0.8 omission rule).
//
// `parse_einsum("ij;jk=>ik")` gives two right-hand slots and one result slot. Every slot has three
// rows; a row whose kind separator is omitted reads as the context ellipsis of its kind
// (`x` == `...|...->x`), an explicitly written empty row stays empty (`|->x`).
//
//   EinsumSpec s = parse_einsum("b|i->o; o->p => b|i->p");
//   s.rhs.size() == 2;  s.lhs.output.dims[0].label == "p"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace cannl::shape {

/// One component of a concatenation `a^3^b`: a label or an integer size (shift / pad).
struct ConcatPart {
  std::string label;        // empty for an integer part
  std::int64_t size = 0;    // for an integer part
  int pos = 0;
};

/// One written axis (semantics-frontend.md 2.2, 2.7, 2.8):
///   Label  `i`, `_`, `height`          Fixed  `0`, `12`
///   Affine `2*o+1` (strided), `2*o=+3*k` (padded conv, dilation 3), `o<+k` (valid conv)
///   Concat `a^b^c`, `1^i` (integer parts shift or pad)
/// Affine index: stride*over + offset + dilation*kernel (- left padding when use_padding).
struct AxisSpec {
  enum class Kind { Label, Fixed, Affine, Concat } kind = Kind::Label;
  std::string label;        // for Label; the `over` label for Affine
  std::int64_t index = 0;   // for Fixed; in a labels spec: the size
  std::string basis;        // labels spec only: the named basis of a size (`rgb=3`)
  int pos = 0;              // character offset in the spec, for error carets
  // Affine.
  std::int64_t stride = 1, offset = 0, dilation = 1;
  std::string kernel;       // empty: strided iteration without a kernel
  bool use_padding = false;
  // Concat.
  std::vector<ConcatPart> parts;
};

/// One row: leading axes, an optional ellipsis, trailing axes (all axes are trailing without one).
struct RowSpec {
  std::vector<AxisSpec> beg;
  bool has_ellipsis = false;
  bool is_context = false;  // `...` or an omitted row: the row variable of this kind
  std::string var_name;     // for `..v..`
  std::vector<AxisSpec> dims;
  int pos = 0;              // where the row starts in the spec
  bool omitted = false;     // the row was not written at all (0.8: reads as `...`)
};

/// `batch|input->output`.
struct SlotSpec {
  RowSpec batch, input, output;
  int pos = 0;
};

struct EinsumSpec {
  std::string text;
  bool multichar = false;
  std::vector<SlotSpec> rhs;  // operands, in order
  SlotSpec lhs;               // the result
};

/// Whether `spec` is read in multichar mode: it contains `,` `*` `+` `^` `&` `<` or an `=` not
/// followed by `>`. `is_multichar("a,b=>b") == true`, `is_multichar("ab=>b") == false`.
bool is_multichar(std::string_view spec);

/// Whether `spec` concatenates (an axis `a^b`): '^' appears in the grammar only there.
///   has_concatenation("k;i,j=>k^i") == true
bool has_concatenation(std::string_view spec);

/// Parses a full spec `rhs1;rhs2=>lhs`. Throws EinsumSyntaxError with the spec and a caret line:
///   parse_einsum("ij;jk=>ik;")  // "unexpected ';' at position 9 in einsum spec: ..."
EinsumSpec parse_einsum(std::string_view spec);

/// Parses a labels spec (semantics-frontend.md 1.5): one slot `batch|input->output` where a
/// number is a size (Fixed axes carry it in `index`), `rgb=3` is a size with the named basis
/// `rgb`, a letter is a dimension variable and `...` / `..v..` a row variable. An omitted row
/// reads as `...` (0.8). Strided, convolution and concatenation axes are EinsumSyntaxErrors.
///   parse_labels_spec("2|rgb=3->..v.., 7").input.dims[0].basis == "rgb"
SlotSpec parse_labels_spec(std::string_view spec);

/// The spec and a caret under `pos`, indented by two spaces: "  ij;jk=>ik;\n           ^".
std::string caret_excerpt(std::string_view spec, int pos);

}  // namespace cannl::shape
