#pragma once
// Statement and scalar printing of the C-family printer: the loop IR -> C text, following the
// typing and conversion rules of cannl/ir/loop_ir.h. Dialect spellings come from CLikePrinter.
//
// Every scalar prints as an expression holding a *value* of its dtype: narrow floats (f16, bf16,
// fp8) are held in a float that is exactly representable in the narrow format; buffers hold the
// storage format, so Get decodes and Set encodes.
//
//   BodyPrinter p(dialect, names);  std::string text = p.print(routine.body, /*indent=*/1);

#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "cannl/codegen/clike_printer.h"
#include "codegen/clike/identifiers.h"

namespace cannl::codegen {

/// An expression's text and the dtype of the value it holds.
struct Expr {
  std::string text;
  ir::DType dtype;
};

class BodyPrinter {
 public:
  BodyPrinter(const CLikePrinter& dialect, const IdentifierTable& names,
              const std::vector<ir::StaticSymbol>& statics, const CodegenOptions& options = {});

  /// The statements of `body`, each line indented by `indent` levels (two spaces each).
  std::string print(const ir::StmtRef& body, int indent);

  /// Text of `e`'s value converted to dtype `to` (loop_ir.h conversion rules).
  std::string convert(const Expr& e, ir::DType to) const;
  /// Text of `e`'s value encoded in the storage format of dtype `to`.
  std::string store(const Expr& e, ir::DType to) const;
  /// Text of a storage element of dtype `t` decoded to its value.
  std::string load(const std::string& element, ir::DType t) const;
  /// The zero value of dtype `t` (an initializer for u4x32).
  std::string zero(ir::DType t) const;

  // ---- for the dialects' hooks (grid, vector and tile rendering) ----
  const CodegenOptions& options() const { return options_; }
  /// The launch geometry of the GPU kernel being printed (nullptr outside print_kernels).
  const ir::KernelGeometry* geometry() const { return geometry_; }
  void set_geometry(const ir::KernelGeometry* geometry) { geometry_ = geometry; }
  /// Whether the current line may run on some threads of a block and not others (under an If
  /// whose condition may differ between them, ir::same_in_every_thread, or a guarded thread
  /// index): a barrier there would hang, so cooperative renderings fall back.
  bool divergent() const { return divergence_ > 0; }
  void enter_divergent() { ++divergence_; }
  void leave_divergent() { --divergence_; }
  /// The index of a thread loop (a Workgroup loop bound to a thread index) is in scope from
  /// enter_thread_loop to leave_thread_loop: an If naming it is divergent.
  void enter_thread_loop(ir::Symbol index) { thread_indices_.insert(index); }
  void leave_thread_loop(ir::Symbol index) { thread_indices_.erase(index); }
  /// A declaration the kernel must make at its top (OpenCL allows `__local` arrays nowhere else);
  /// print_kernels writes them before the body.
  void declare_at_kernel_scope(std::string declaration) { kernel_declarations_.push_back(std::move(declaration)); }
  const std::vector<std::string>& kernel_declarations() const { return kernel_declarations_; }
  const IdentifierTable& names() const { return names_; }
  /// Whether Comment statements and the source assignments of Sets are printed (on by default).
  /// Off for shared kernel functions: the comments name the nodes of one caller.
  void set_comments(bool on) { comments_ = on; }
  /// Where the output stands now: a place for bracket_uniform_region.
  std::size_t mark() const { return out_->size(); }
  /// Brackets a region all of a block's threads enter alike (a Grid loop's guard, an If holding
  /// a barrier), whose lines start at `start` and whose body was printed from `from`, with
  /// barriers where the dialect asks for them (CLikePrinter::brackets_uniform_regions_with_barriers)
  /// and the body printed a barrier: one before `start`, one at the body's end, each unless a
  /// barrier is there already. Safe: a region holding a barrier is where all of a block's
  /// threads arrive (schedule::lower_for_target, fission), and all that reached its barrier
  /// reach its end.
  void bracket_uniform_region(std::size_t start, std::size_t from);
  /// One line at the current indentation; `indent` / `dedent` move it by one level.
  void line(const std::string& text);
  void indent() { ++indent_; }
  void dedent() { --indent_; }
  /// The C type of loop counters, dynamic rows and offsets: the target's index_dtype.
  std::string index_type() const { return options_.target.index_dtype == ir::DType::I32 ? "int32_t" : "int64_t"; }
  /// A fresh C loop variable name (i0, i1, ...).
  std::string fresh_loop_name() { return "i" + std::to_string(next_loop_++); }
  /// The statement `s` (and everything under it) at the current indentation.
  void stmt(const ir::StmtRef& s);
  /// The loop with its index named `name` (already bound) over [begin, end).
  void print_serial_loop(const ir::For& f, const std::string& name, const std::string& begin,
                         const std::string& end);
  /// Binds loop symbol `s` to the C expression `text` (rebinding a loop's lane offset).
  void bind(ir::Symbol s, const std::string& text) { symbols_[s.id] = text; }
  /// Reads of the element `element` (a node's `name[offset]` text, of a dtype whose storage is
  /// its value) print as `value` until forget_reads: a GPU vector loop's lanes, loaded ahead.
  void read_as(const std::string& element, const std::string& value) { read_as_[element] = value; }
  void forget_reads() { read_as_.clear(); }
  Expr scalar(const ir::ScalarRef& s);
  /// The flat element offset of `index` into `node`'s buffer.
  std::string offset(const ir::TensorNode& node, const std::vector<ir::AxisIndex>& index) const;

 private:
  // ---- statements (stmt_printer.cpp) ----
  void print_for(const ir::For& f);
  void print_set(const ir::Set& s);
  void print_set_local(const ir::SetLocal& s);
  void print_declare_local(const ir::DeclareLocal& d);
  void print_if(const ir::If& s);
  void print_set_dynamic(const ir::SetDynamic& s);

  /// Emits `const <index type> r<k> = cannl_dyn_row(...)` and returns the access index with the dynamic
  /// axis bound to a fresh symbol named r<k> (registered in symbols_; `forget_row` unbinds it).
  std::vector<ir::AxisIndex> dynamic_index(const ir::TensorNode& node,
                                           const std::vector<ir::AxisIndex>& index, int axis,
                                           const ir::ScalarRef& row, std::string& row_name);
  /// Emits the lines built by `make` (which may print scalars); when those scalars hoisted local
  /// scopes, wraps their declarations, bodies and the lines in a `{ ... }` block, inside which it
  /// then runs `after` (which prints more lines at the same level).
  void with_hoisted_locals(const std::function<std::vector<std::string>()>& make,
                           const std::function<void()>& after = {});

  // ---- scalars (scalar_printer.cpp) ----
  Expr constant(const ir::Constant& c) const;
  Expr constant_bits(const ir::ConstantBits& c) const;
  Expr get(const ir::Get& g);
  Expr local_scope(const ir::LocalScope& l);
  Expr apply(const ir::Apply& a);
  Expr get_dynamic(const ir::GetDynamic& g);
  Expr apply_random(const ir::Apply& a);
  std::string spelled_op(const ir::Apply& a, ir::DType compute, const std::vector<std::string>& args) const;

  // ---- indexing (conversions.cpp) ----
  /// `wide`: the value is wanted as int64 (EmbedIndex): under 32-bit indices every symbol is
  /// widened before it is scaled, so the sum cannot overflow where the offsets' check does not look.
  std::string index(const ir::AxisIndex& at, bool wide = false) const;
  const std::string& local_name(int scope_id, ir::DType dtype);

  const CLikePrinter& d_;
  const IdentifierTable& names_;
  CodegenOptions options_;
  const ir::KernelGeometry* geometry_ = nullptr;
  int divergence_ = 0;
  std::set<ir::Symbol> thread_indices_;  // of the thread loops around the current line
  bool comments_ = true;
  std::vector<std::string> kernel_declarations_;
  std::string* out_ = nullptr;
  int indent_ = 0;
  std::map<int, std::string> symbols_;  // symbol id -> C name (loops i<k>, statics)
  std::map<std::string, std::string> read_as_;  // element text -> the value read_as gave it
  int next_loop_ = 0;
  int next_row_ = 0;  // dynamic rows r0, r1, ...
  std::map<int, std::pair<std::string, ir::DType>> locals_;  // scope id -> v<k>, dtype
  std::vector<std::set<int>> hoisted_;  // scope ids declared by each open hoisting block
};

}  // namespace cannl::codegen
