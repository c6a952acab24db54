// Vectorized loops of the GPU dialects (ir::gpu_vector_loop): one thread's lanes of contiguous
// 4-byte cells, moved as whole vectors where the access is aligned (ir::vector_aligned) and
// computed lane by lane with the scalar expressions, so the bits are the serial loop's.
//
//   { /* 4 lanes: 16-byte loads and stores where aligned, the arithmetic lane by lane */
//     const float4 i7 = *(const float4 *)&x[(256*i1 + 4*i2 + 0)];
//     *(float4 *)&y[(256*i1 + 4*i2 + 0)] = make_float4(expf(i7.x), expf(i7.y), expf(i7.z), expf(i7.w));
//   }
//
// The reads moved ahead as vectors are those of nodes the loop does not write; reads of a node
// it writes are at the cell the same lane writes (ir::gpu_vector_loop) and stay in statement
// order, each statement's lanes before the next statement. An access not provably aligned
// (a row of odd length, an offset of 2) is read or written lane by lane instead: CUDA's 16-byte
// accesses fault when misaligned, and OpenCL's vload is kept to the same rule so that PoCL runs
// the decisions a GPU runs.
#include <algorithm>

#include "cannl/ir/target.h"
#include "cannl/support/error.h"
#include "codegen/clike/body_printer.h"
#include "codegen/gpu/gpu_dialect.h"

namespace cannl::codegen {

std::string gpu_vector_type(ir::DType t, int lanes) {
  internal_check(ir::gpu_vector_dtype(t), [&] { return "codegen: a GPU vector of " + std::string(ir::dtype_name(t)); });
  const char* base = t == ir::DType::F32 ? "float" : t == ir::DType::I32 ? "int" : "uint";
  return base + std::to_string(lanes);
}

namespace {

constexpr const char* kLanes[] = {"x", "y", "z", "w"};

void collect_reads(const ir::ScalarRef& s, std::vector<const ir::Get*>& out) {
  if (const auto* g = std::get_if<ir::Get>(&s->node)) out.push_back(g);
  if (const auto* a = std::get_if<ir::Apply>(&s->node))
    for (const ir::ScalarRef& x : a->args) collect_reads(x, out);
}

bool writes(const std::vector<const ir::Set*>& sets, const ir::TensorNode& node) {
  return std::any_of(sets.begin(), sets.end(), [&](const ir::Set* s) { return s->node->id == node.id; });
}

// The contiguous, aligned reads of 4-byte nodes the loop does not write, each once.
std::vector<const ir::Get*> vector_reads(const std::vector<const ir::Set*>& sets, ir::Symbol lane, int lanes) {
  std::vector<const ir::Get*> all, out;
  for (const ir::Set* s : sets) collect_reads(s->value, all);
  for (const ir::Get* g : all) {
    if (!ir::gpu_vector_dtype(g->node->dtype)) continue;
    if (writes(sets, *g->node) || !ir::vector_aligned(*g->node, g->index, lane, lanes)) continue;
    const bool seen = std::any_of(out.begin(), out.end(), [&](const ir::Get* o) {
      return o->node->id == g->node->id && o->index == g->index;
    });
    if (!seen) out.push_back(g);
  }
  return out;
}

}  // namespace

void GpuDialect::print_vectorized(BodyPrinter& p, const ir::For& f, const std::string& name) const {
  internal_check(ir::gpu_vector_loop(f, p.options().target),
                 "codegen: a Vectorized loop the GPU cannot run as vectors reached the GPU printer");
  const int lanes = static_cast<int>(f.end);
  const std::vector<ir::StmtRef> stmts = ir::flatten_seq(f.body);
  std::vector<const ir::Set*> sets;
  for (const ir::StmtRef& s : stmts) sets.push_back(&std::get<ir::Set>(s->node));
  const auto element_at = [&](int lane, const ir::TensorNode& node, const std::vector<ir::AxisIndex>& index) {
    p.bind(f.index, std::to_string(lane));
    return p.names().node(node) + "[" + p.offset(node, index) + "]";
  };
  p.line("{ /* " + std::to_string(lanes) + " lanes: " + std::to_string(4 * lanes) +
         "-byte loads and stores where aligned, the arithmetic lane by lane */");
  p.indent();
  for (const ir::Get* g : vector_reads(sets, f.index, lanes)) {
    const std::string v = p.fresh_loop_name(), vtype = gpu_vector_type(g->node->dtype, lanes);
    p.line("const " + vtype + " " + v + " = " + vector_load(vtype, lanes, element_at(0, *g->node, g->index)) + ";");
    for (int lane = 0; lane < lanes; ++lane) p.read_as(element_at(lane, *g->node, g->index), v + "." + kLanes[lane]);
  }
  for (std::size_t k = 0; k < sets.size(); ++k) {
    const ir::Set& s = *sets[k];
    if (!ir::vector_aligned(*s.node, s.index, f.index, lanes)) {
      for (int lane = 0; lane < lanes; ++lane) {
        p.bind(f.index, std::to_string(lane));
        p.stmt(stmts[k]);
      }
      continue;
    }
    std::vector<std::string> values;
    for (int lane = 0; lane < lanes; ++lane) {
      p.bind(f.index, std::to_string(lane));
      values.push_back(p.store(p.scalar(s.value), s.node->dtype));
    }
    const std::string vtype = gpu_vector_type(s.node->dtype, lanes);
    std::string vector = vector_constructor(vtype) + "(";
    for (int lane = 0; lane < lanes; ++lane) vector += (lane ? ", " : "") + values[static_cast<std::size_t>(lane)];
    p.line(vector_store(vtype, lanes, element_at(0, *s.node, s.index), vector + ")"));
  }
  p.forget_reads();
  p.bind(f.index, name);
  p.dedent();
  p.line("}");
}

}  // namespace cannl::codegen
