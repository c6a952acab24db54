// Grid loops of the C dialect: contiguous chunks of the index range, one `#pragma omp parallel
// for` iteration each, on OpenMP's persistent pool (reference 5.4, "Intra-kernel CPU
// parallelism").
//
// Chunk c covers [begin + extent*c/chunks, begin + extent*(c+1)/chunks): every iteration runs
// exactly once, on one thread, in increasing order inside its chunk. The schedule's final
// lowering round proved the iterations independent (validate_parallel) and wrote the chunk count
// and team into the loop, so results equal serial execution bit for bit whatever they are.
#include "codegen/c/c_dialect.h"
#include "codegen/clike/body_printer.h"

namespace cannl::codegen {

void CDialect::print_grid(BodyPrinter& p, const ir::For& f, const std::string& name) const {
  const std::int64_t extent = f.end - f.begin;
  const std::string chunk = p.fresh_loop_name();
  const std::string count = p.fresh_loop_name();
  p.line("{");
  p.indent();
  p.line("const int64_t " + count + " = " +
         (f.chunks > 0 ? std::to_string(f.chunks) : "cannl_grid_chunks(" + std::to_string(extent) + ", 0)") + ";");
  p.line("#pragma omp parallel for schedule(static)" +
         (f.team > 0 ? " num_threads(" + std::to_string(f.team) + ")" : std::string()));
  p.line("for (int64_t " + chunk + " = 0; " + chunk + " < " + count + "; ++" + chunk + ") {");
  p.indent();
  const std::string e = std::to_string(extent);
  const std::string b = f.begin == 0 ? "" : std::to_string(f.begin) + " + ";
  p.print_serial_loop(f, name, b + e + " * " + chunk + " / " + count, b + e + " * (" + chunk + " + 1) / " + count);
  p.dedent();
  p.line("}");
  p.dedent();
  p.line("}");
}

}  // namespace cannl::codegen
