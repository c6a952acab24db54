// The index type the backends put in their target record (config index_prec, large_models), and
// the C backend running 32-bit indices: the same bits as the interpreter, and a node int32
// cannot address is an IndexRangeError before anything is compiled.
#include <gtest/gtest.h>

#include "backends/routines.h"
#include "backends/run_util.h"
#include "cannl/support/config.h"
#include "cannl/support/error.h"

namespace cannl {
namespace {

using namespace cannl::ir;
using test_util::bytes_of;
using test_util::cc;
using test_util::ConfigGuard;
using test_util::run_on;

TEST(IndexPrecisionConfig, CcKeeps64BitUnlessAskedAndLargeModelsForces64) {
  ConfigGuard guard;
  EXPECT_EQ(cc()->target().index_dtype, DType::I64);
  config::set_override("index_prec", "int32");
  EXPECT_EQ(cc()->target().index_dtype, DType::I32);
  config::set_override("index_prec", "int64");
  EXPECT_EQ(cc()->target().index_dtype, DType::I64);
  config::set_override("index_prec", "auto");
  config::set_override("large_models", "true");
  EXPECT_EQ(cc()->target().index_dtype, DType::I64);
}

TEST(IndexPrecisionConfig, ContradictionsAndUnknownValuesAreConfigErrors) {
  ConfigGuard guard;
  config::set_override("index_prec", "int16");
  EXPECT_THROW(cc()->target(), ConfigError);
  config::set_override("index_prec", "int32");
  config::set_override("large_models", "true");
  try {
    cc()->target();
    FAIL() << "expected ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("large_models"), std::string::npos) << e.what();
  }
}

// A row-sum and a dynamic gather compiled with 32-bit indices: bit for bit the interpreter's.
TEST(IndexPrecisionConfig, Int32IndicesOnTheCBackendMatchTheInterpreter) {
  ConfigGuard guard;
  config::set_override("index_prec", "int32");
  auto interp = backends::make_interpreter_backend();

  const auto sum = test_routines::row_sum(37, 53);
  std::vector<float> m(37 * 53);
  for (std::size_t k = 0; k < m.size(); ++k) m[k] = 1.0f / static_cast<float>(k + 3);
  EXPECT_EQ(run_on(*cc(), sum, {bytes_of(m), {}}), run_on(*interp, sum, {bytes_of(m), {}}));

  auto table = make_node("table", DType::F32, {5, 3});
  auto ids = make_node("ids", DType::F32, {4});
  auto out = make_node("out", DType::F32, {4, 3});
  const Symbol i = fresh_symbol(), j = fresh_symbol();
  const auto gather = get_dynamic(table, {AxisIndex::fixed(0), AxisIndex::iterator(j)}, 0, get(ids, {AxisIndex::iterator(i)}));
  const backends::CompileRequest request{
      LoweredRoutine{"gather32", for_loop(i, 0, 4, for_loop(j, 0, 3, set(out, {AxisIndex::iterator(i), AxisIndex::iterator(j)}, gather))), {}},
      {table, ids, out}};
  std::vector<float> t(15);
  for (std::size_t k = 0; k < t.size(); ++k) t[k] = static_cast<float>(k) + 0.5f;
  const std::vector<float> rows{4, -1, 2.5f, 0};  // in range, negative, fractional, first
  const auto got = run_on(*cc(), request, {bytes_of(t), bytes_of(rows), {}});
  EXPECT_EQ(got, run_on(*interp, request, {bytes_of(t), bytes_of(rows), {}}));
  EXPECT_EQ(test_util::values_of<float>(got[2])[0], 12.5f);
}

TEST(IndexPrecisionConfig, ANodeTooLargeForInt32IsAnIndexRangeErrorOnTheCBackend) {
  ConfigGuard guard;
  config::set_override("index_prec", "int32");
  auto x = make_node("x", DType::F32, {2});
  auto big = make_node("big_table", DType::F32, {std::int64_t{1} << 32});
  const Symbol i = fresh_symbol();
  const backends::CompileRequest request{
      LoweredRoutine{"too_big", for_loop(i, 0, 2, set(big, {AxisIndex::iterator(i)}, get(x, {AxisIndex::iterator(i)}))), {}},
      {x, big}};
  try {
    cc()->compile(request);
    FAIL() << "expected IndexRangeError";
  } catch (const IndexRangeError& e) {
    EXPECT_NE(std::string(e.what()).find("big_table has 4294967296 elements"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace cannl
