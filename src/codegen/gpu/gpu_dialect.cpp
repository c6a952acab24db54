// The GPU dialects' shared renderings (gpu_dialect.h).
#include "codegen/gpu/gpu_dialect.h"

#include <cctype>
#include <utility>

#include "cannl/support/error.h"
#include "codegen/clike/body_printer.h"
#include "codegen/clike/prelude.h"

namespace cannl::codegen {

std::string integer_limit_macros() {
  std::string out;
  for (const auto& [name, value] :
       {std::pair{"INT32_MIN", "(-2147483647 - 1)"}, {"INT32_MAX", "2147483647"}, {"UINT32_MAX", "4294967295u"},
        {"INT64_MIN", "(-9223372036854775807LL - 1)"}, {"INT64_MAX", "9223372036854775807LL"},
        {"UINT64_MAX", "18446744073709551615ULL"}, {"UINT8_MAX", "255"}}) {
    out += std::string("#ifndef ") + name + "\n#define " + name + " " + value + "\n#endif\n";
  }
  return out;
}

namespace {

// The identifiers in `text` (C tokens; numbers such as 0xffffffffu and members such as the x of
// threadIdx.x are skipped whole).
void add_identifiers(const std::string& text, std::set<std::string>& out) {
  const auto word_char = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_'; };
  for (std::size_t at = 0; at < text.size();) {
    if (!word_char(text[at])) {
      ++at;
      continue;
    }
    std::size_t end = at;
    while (end < text.size() && word_char(text[end])) ++end;
    const bool member = at > 0 && text[at - 1] == '.';
    if (std::isdigit(static_cast<unsigned char>(text[at])) == 0 && !member) out.insert(text.substr(at, end - at));
    at = end;
  }
}

}  // namespace

std::set<std::string> GpuDialect::reserved_words() const {
  std::set<std::string> words = CLikePrinter::reserved_words();
  // Operands are spelled by reserved names (`cannl_*`), so only the dialect's own words remain.
  std::string spellings = barrier() + " " + shuffle_down("cannl_v", "cannl_s", 32);
  for (int slot = 0; slot < 3; ++slot) spellings += " " + block_index(slot) + " " + thread_index(slot);
  for (const ir::DType t : {ir::DType::F32, ir::DType::I32, ir::DType::U32}) {
    for (const int lanes : {2, 4}) {
      const std::string v = gpu_vector_type(t, lanes);
      spellings += " " + v + " " + vector_constructor(v) + " " + vector_load(v, lanes, "cannl_e") + " " +
                   vector_store(v, lanes, "cannl_e", "cannl_v");
    }
  }
  add_identifiers(spellings, words);
  return words;
}

void GpuDialect::append_bitcast_helpers(std::vector<PreludeHelper>& out) const {
  auto helper = [&](const std::string& name, const std::string& ret, const std::string& arg, const std::string& fn) {
    out.push_back({name, "$P " + ret + " " + name + "(" + arg + " x) { return " + fn + "(x); }\n", {}});
  };
  helper("cannl_bits_of_f32", "int32_t", "float", f32_bits_fn());
  helper("cannl_f32_of_bits", "float", "int32_t", bits_f32_fn());
  helper("cannl_bits_of_f64", "int64_t", "double", f64_bits_fn());
  helper("cannl_f64_of_bits", "double", "int64_t", bits_f64_fn());
}

std::string GpuDialect::zero_out(const std::string& ident, std::int64_t elements, std::size_t) const {
  // Reached only inside a kernel's own loops (fission makes a top-level zeroing a device memset).
  // The counter's name is reserved (`cannl_*`): a buffer called `z` would be hidden by a `z`.
  return "for (int64_t cannl_z = 0; cannl_z < " + std::to_string(elements) + "; ++cannl_z) " + ident + "[cannl_z] = 0;";
}

void GpuDialect::print_grid(BodyPrinter& p, const ir::For& f, const std::string& name) const {
  bind_hardware_index(p, f, name, /*grid=*/true);
}

void GpuDialect::print_workgroup(BodyPrinter& p, const ir::For& f, const std::string& name) const {
  if (f.axis == ir::AxisType::WorkgroupReduce) {
    print_workgroup_reduce(p, f, name);
    return;
  }
  bind_hardware_index(p, f, name, /*grid=*/false);
}

void GpuDialect::bind_hardware_index(BodyPrinter& p, const ir::For& f, const std::string& name, bool grid) const {
  const ir::KernelGeometry* g = p.geometry();
  internal_check(g != nullptr, "codegen: a Grid or Workgroup loop outside a GPU kernel");
  const auto slot_it = g->slot_of.find(f.index.id);
  internal_check(slot_it != g->slot_of.end() && f.begin == 0,
                 "codegen: annotated loop without a slot in the kernel's geometry");
  const int slot = slot_it->second;
  const std::int64_t launched = (grid ? g->grid : g->block)[static_cast<std::size_t>(slot)];
  p.line("{");
  p.indent();
  p.line("const " + p.index_type() + " " + name + " = (" + p.index_type() + ")" + (grid ? block_index(slot) : thread_index(slot)) + ";");
  // Other loops of the kernel share the slot at a larger extent: this one's surplus does nothing.
  const bool guarded = f.end < launched;
  const std::size_t start = p.mark();
  if (guarded) {
    p.line("if (" + name + " < " + std::to_string(f.end) + ") {");
    p.indent();
    if (!grid) p.enter_divergent();  // a block index is the same on all of a block's threads
  }
  const std::size_t from = p.mark();
  if (!grid) p.enter_thread_loop(f.index);
  p.stmt(f.body);
  if (!grid) p.leave_thread_loop(f.index);
  if (guarded && grid) p.bracket_uniform_region(start, from);
  if (guarded) {
    if (!grid) p.leave_divergent();
    p.dedent();
    p.line("}");
  }
  p.dedent();
  p.line("}");
}

}  // namespace cannl::codegen
