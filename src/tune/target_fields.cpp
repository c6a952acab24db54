// The tuner's view of a target record (see target_fields.h).
#include "tune/target_fields.h"

#include <sstream>

#include "cannl/tune/tune.h"

namespace cannl::tune {

std::string target_fields_text(const ir::Target& t) {
  std::ostringstream out;
  out << t.gemm.mr << ' ' << t.gemm.nv << ' ' << t.gemm.kc << ' ' << t.gemm.nc << ' ' << t.gemm.mc << ' '
      << t.min_tile_work << ' ' << t.threads << ' ' << t.grid_chunks;
  const ir::TileBlocking& b = t.gpu_tile;
  if (b.blocked()) out << " gpu_tile " << b.bm << ' ' << b.bn << ' ' << b.bk << ' ' << b.tm << ' ' << b.tn;
  const ir::TileBlocking& m = t.gpu_mma_tile;
  if (!t.gpu_mma_formats.empty() && m.blocked())
    out << " gpu_mma " << m.bm << ' ' << m.bn << ' ' << m.bk << ' ' << m.tm << ' ' << m.tn;
  return out.str();
}

std::optional<ir::Target> with_target_fields(const ir::Target& base, const std::string& text) {
  std::istringstream in(text);
  ir::Target t = base;
  if (!(in >> t.gemm.mr >> t.gemm.nv >> t.gemm.kc >> t.gemm.nc >> t.gemm.mc >> t.min_tile_work >> t.threads >>
        t.grid_chunks))
    return std::nullopt;
  // Then "gpu_tile bm bn bk tm tn" and "gpu_mma bm bn bk wm wn", each optional, in that order.
  std::string rest;
  bool ok = true;
  if (in >> rest && rest == "gpu_tile") {
    ir::TileBlocking& b = t.gpu_tile;
    ok = static_cast<bool>(in >> b.bm >> b.bn >> b.bk >> b.tm >> b.tn) && b.valid();
    if (!(in >> rest)) rest.clear();
  }
  if (ok && rest == "gpu_mma") {
    ir::TileBlocking& m = t.gpu_mma_tile;
    ok = static_cast<bool>(in >> m.bm >> m.bn >> m.bk >> m.tm >> m.tn);
    ir::TileBlocking strictest = m;
    strictest.mma = ir::NarrowFormat::BF16;
    ok = ok && strictest.valid();
    if (!(in >> rest)) rest.clear();
  }
  if (!ok || !rest.empty()) return std::nullopt;
  const bool sane = t.gemm.mr >= 0 && t.gemm.nv >= 0 && t.gemm.kc >= 0 && t.gemm.nc >= 0 && t.gemm.mc >= 0 &&
                    t.gemm.mr * t.gemm.nv <= 32 && t.min_tile_work >= 0 && t.threads >= 0 && t.threads <= 4096 &&
                    t.grid_chunks >= 0;
  if (!sane) return std::nullopt;
  return t;
}

std::string full_target_text(const ir::Target& t) {
  std::string out = t.backend + " vector_bytes " + std::to_string(t.vector_bytes) + " ops";
  for (ir::Op op : t.vector_ops) out += " " + std::string(ir::op_name(op));
  out += " runtime " + std::to_string(t.parallel_runtime) + " workgroups " + std::to_string(t.workgroups);
  out += " fields " + target_fields_text(t);
  out += " gpu " + std::to_string(t.gpu.max_threads_per_block) + " " + std::to_string(t.gpu.max_shared_bytes) +
         " " + std::to_string(t.gpu.warp_size);
  const ir::TileBlocking& b = t.gpu_tile;
  out += " gpu_tile " + std::to_string(b.bm) + " " + std::to_string(b.bn) + " " + std::to_string(b.bk) + " " +
         std::to_string(b.tm) + " " + std::to_string(b.tn);
  if (!t.gpu_mma_formats.empty()) {  // tensor cores change what a GPU runs
    const ir::TileBlocking& m = t.gpu_mma_tile;
    out += " gpu_mma";
    for (ir::NarrowFormat f : t.gpu_mma_formats) out += " " + std::string(ir::narrow_format_name(f));
    out += " tile " + std::to_string(m.bm) + " " + std::to_string(m.bn) + " " + std::to_string(m.bk) + " " +
           std::to_string(m.tm) + " " + std::to_string(m.tn);
  }
  if (t.gpu_async_copy) out += " async_copy";  // pipelined staging changes what a GPU runs
  if (t.gpu_vector_bytes > 0) out += " gpu_vectors " + std::to_string(t.gpu_vector_bytes);
  out += " index " + std::string(ir::dtype_name(t.index_dtype));
  return out;
}

std::string describe_blocking(const ir::TileBlocking& b, const std::string& unit) {
  return std::to_string(b.bm) + "x" + std::to_string(b.bn) + "x" + std::to_string(b.bk) + " per " + unit + " " +
         std::to_string(b.tm) + "x" + std::to_string(b.tn);
}

std::string describe_target(const ir::Target& t) {
  if (t.workgroups)
    return (t.gpu_tile.blocked() ? "gpu_tile " + describe_blocking(t.gpu_tile) + " " : std::string()) +
           (!t.gpu_mma_formats.empty() && t.gpu_mma_tile.blocked()
                ? "gpu_mma " + describe_blocking(t.gpu_mma_tile, "warp") + " " : std::string()) +
           "min_tile_work " + std::to_string(t.min_tile_work);
  return "threads " + std::to_string(t.threads) + " chunks " + std::to_string(t.grid_chunks) + " gemm " +
         std::to_string(t.gemm.mr) + "x" + std::to_string(t.gemm.nv) + " kc " + std::to_string(t.gemm.kc) +
         " nc " + std::to_string(t.gemm.nc) + " mc " + std::to_string(t.gemm.mc) + " min_tile_work " +
         std::to_string(t.min_tile_work) +
         (t.gpu_tile.blocked() ? " gpu_tile " + describe_blocking(t.gpu_tile) : "");
}

const char* reassociation_licence_key(const ir::Target& target) {
  return target.workgroups ? "gpu_schedule_reassociate" : "cpu_schedule_reassociate";
}

}  // namespace cannl::tune
