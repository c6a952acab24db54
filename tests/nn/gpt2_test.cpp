// GPT-2 against Hugging Face's GPT2LMHeadModel: the fixture in tests/parity/gpt2 (written by
// scripts/make_gpt2_fixture.py: a small random-weight model, its reference logits computed in f64
// by PyTorch) loaded under both naming schemes, cannl computing in f32 on the C backend.
// Error measure: max_i |got_i - want_i| / max(|want_i|, kFloor * max_j |want_j|) with kFloor = 1e-2,
// i.e. relative, except that logits a hundred times smaller than the largest are measured against
// a hundredth of the largest: they are sums of products that cancel, and f32 rounding of the terms
// dominates them (PyTorch's own f32 logits miss the f64 reference by 1.1e-4 with a 1e-3 floor and
// 2e-5 with this one; see the script's output). Measured: cannl 9.3e-6 on this fixture; on the
// 124M model (Full124MMatchesPyTorch, opt-in) cannl 1.3e-5 and PyTorch's own f32 6.1e-5.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include "cannl/io/safetensors.h"
#include "cannl/nn/gpt2.h"
#include "cannl/nn/ops.h"
#include "cannl/nn/training.h"
#include "cannl/support/config.h"
#include "cannl/support/error.h"
#include "tensor/fresh_tensors.h"

namespace cannl {
namespace {

using nn::Gpt2;
using nn::Gpt2Config;

constexpr double kTolerance = 1e-4;
constexpr double kFloor = 1e-2;

std::filesystem::path fixture(const std::string& name) {
  return std::filesystem::path(CANNL_SOURCE_DIR) / "tests/parity/gpt2" / name;
}

std::string read_text(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::vector<std::int64_t> read_ids_at(const std::filesystem::path& path) {
  std::vector<std::int64_t> ids;
  std::istringstream in(read_text(path));
  std::string item;
  while (std::getline(in, item, ',')) ids.push_back(std::stoll(item));
  return ids;
}

std::vector<std::int64_t> read_ids(const std::string& name) { return read_ids_at(fixture(name)); }

std::vector<double> read_numbers_at(const std::filesystem::path& path) {
  std::vector<double> v;
  std::istringstream in(read_text(path));
  double x = 0;
  while (in >> x) v.push_back(x);
  return v;
}

std::vector<double> read_numbers(const std::string& name) { return read_numbers_at(fixture(name)); }

double max_relative_error(const std::vector<double>& got, const std::vector<double>& want) {
  if (got.size() != want.size()) return INFINITY;
  double scale = 0;
  for (double w : want) scale = std::max(scale, std::abs(w));
  double worst = 0;
  for (std::size_t i = 0; i < got.size(); ++i)
    worst = std::max(worst, std::abs(got[i] - want[i]) / std::max(std::abs(want[i]), kFloor * scale));
  return worst;
}

class Gpt2Test : public ::testing::Test {
 protected:
  testing_util::FreshTensors fresh_{"f32"};

  Gpt2Config small() const { return nn::read_gpt2_config(fixture("config.json")); }
};

/// Every tensor of the fixture checkpoint, with `edit` applied to the list, as an in-memory file.
io::SafetensorsFile edited_checkpoint(
    const std::function<void(std::vector<io::TensorToWrite>&)>& edit) {
  static const auto file = io::SafetensorsFile::open(fixture("bare.safetensors"));
  std::vector<io::TensorToWrite> tensors;
  for (const auto& t : file.tensors())
    tensors.push_back({t.name, t.dtype, t.shape, file.raw_bytes(t.name)});
  edit(tensors);
  return io::SafetensorsFile::from_bytes(io::serialize_safetensors(tensors), "<edited>");
}

void check_logits(const std::string& weights, std::int64_t window) {
  Gpt2Config config = nn::find_gpt2_config(fixture(weights), std::nullopt);
  ASSERT_EQ(config.n_embd, 32);
  Gpt2 model(config, runtime::Context::cpu(), window);
  model.load_weights(io::SafetensorsFile::open(fixture(weights)));
  const auto got = model.logits(read_ids("ids.txt"));
  const auto want = read_numbers("logits.txt");
  const double error = max_relative_error(got, want);
  double abs_error = 0;
  for (std::size_t i = 0; i < got.size(); ++i) abs_error = std::max(abs_error, std::abs(got[i] - want[i]));
  std::printf("  %s, window %lld: max rel err %.3g, max abs err %.3g\n", weights.c_str(),
              static_cast<long long>(window), error, abs_error);
  EXPECT_LT(error, kTolerance);
}

TEST_F(Gpt2Test, PrefixedStateDictMatchesPyTorch) { check_logits("model.safetensors", 16); }

TEST_F(Gpt2Test, BareNamesMatchPyTorch) { check_logits("bare.safetensors", 11); }

// The real 124M architecture (too slow for CI: ~2 minutes to compile and load), opt in with
//   python3 scripts/make_gpt2_fixture.py --full DIR
//   GPT2_124M_DIR=DIR test_nn --gtest_filter=Gpt2Test.Full124MMatchesPyTorch
// DIR holds model.safetensors, config.json, ids.txt and the last position's f64 logits.
TEST_F(Gpt2Test, Full124MMatchesPyTorch) {
  const char* dir = std::getenv("GPT2_124M_DIR");
  if (dir == nullptr) GTEST_SKIP() << "set GPT2_124M_DIR to a make_gpt2_fixture.py --full directory";
  const std::filesystem::path full(dir);
  const auto weights = full / "model.safetensors";
  const Gpt2Config config = nn::find_gpt2_config(weights, std::nullopt);
  ASSERT_EQ(config.n_embd, 768);
  const auto ids = read_ids_at(full / "ids.txt");
  Gpt2 model(config, runtime::Context::cpu(), static_cast<std::int64_t>(ids.size()));
  model.load_weights(io::SafetensorsFile::open(weights));
  const double error = max_relative_error(model.last_logits(ids), read_numbers_at(full / "last_logits.txt"));
  std::printf("  124M, %zu tokens: max rel err %.3g of the last position's logits\n", ids.size(), error);
  EXPECT_LT(error, kTolerance);
}

// CI's guard for the 124M check: with GPT-2's real widths (sums of 768 and 3072 terms) the f32
// logits stay close to exact. The oracle is the same model in f64 on the same random weights
// (unrounded, so the error includes the f32 rounding of the weights); cannl's f64 GPT-2 matches
// PyTorch's f64 logits to 4e-9 on the fixture. Measured: 7.7e-6 with the f64 accumulators of
// gpt2_model.cpp, 1.1e-4 with plain f32 sums; the bound is a fifth of the 1e-4 budget.
TEST_F(Gpt2Test, LongSumsStayExactInF32) {
  const Gpt2Config config{.vocab_size = 512, .n_positions = 8, .n_embd = 768, .n_layer = 2, .n_head = 12};
  const std::vector<std::int64_t> ids = {5, 300, 17, 511, 42, 0, 99, 256};
  const auto logits_in = [&](const char* prec) {
    reset_tensor_state();
    config::set_override("default_prec", prec);
    Gpt2 model(config, runtime::Context::cpu(), 8);
    model.randomize_weights(11);
    return model.last_logits(ids);
  };
  const auto exact = logits_in("f64");
  const double error = max_relative_error(logits_in("f32"), exact);
  std::printf("  n_embd 768, 2 layers: f32 vs f64 max rel err %.3g\n", error);
  EXPECT_LT(error, kTolerance / 5);
}

// The cached step's guard: its contractions accumulate in f32 (Gpt2Config::step_accumulate, 64
// interleaved lanes per dot product under the CPU schedule) and stay within half the budget of
// the same exact oracle. Measured: 3.0e-5.
TEST_F(Gpt2Test, StepSumsStayCloseInF32) {
  const Gpt2Config config{.vocab_size = 512, .n_positions = 8, .n_embd = 768, .n_layer = 2, .n_head = 12};
  const std::vector<std::int64_t> ids = {5, 300, 17, 511, 42, 0, 99, 256};
  reset_tensor_state();
  config::set_override("default_prec", "f64");
  Gpt2 exact(config, runtime::Context::cpu(), 8);
  exact.randomize_weights(11);
  const auto want = exact.last_logits(ids);
  reset_tensor_state();
  config::set_override("default_prec", "f32");
  Gpt2 model(config, runtime::Context::cpu(), 8);
  model.randomize_weights(11);
  std::vector<double> got;
  for (std::size_t p = 0; p < ids.size(); ++p) got = model.step(ids[p], static_cast<std::int64_t>(p));
  const double error = max_relative_error(got, want);
  std::printf("  n_embd 768, 2 layers, cached step: f32 vs f64 max rel err %.3g\n", error);
  EXPECT_LT(error, kTolerance / 2);
}

TEST_F(Gpt2Test, GreedyGenerationMatchesPyTorch) {
  Gpt2 model(small(), runtime::Context::cpu(), 16);
  model.load_weights(io::SafetensorsFile::open(fixture("model.safetensors")));
  EXPECT_EQ(nn::generate(model, read_ids("ids.txt"), 4, {.greedy = true}), read_ids("greedy.txt"));
  // The window bounds generation: 11 ids + at most 5 more in a window of 16.
  EXPECT_EQ(nn::generate(model, read_ids("ids.txt"), 9, {.greedy = true}).size(), 5u);
}

/// Greedy tokens from the whole-window forward, one forward per token (what generate did before
/// the key-value cache).
std::vector<std::int64_t> greedy_full_window(Gpt2& model, std::vector<std::int64_t> ids,
                                             std::int64_t n) {
  std::vector<std::int64_t> added;
  nn::TokenSampler greedy({});
  for (std::int64_t i = 0; i < n; ++i) {
    added.push_back(greedy.next(model.last_logits(ids)));
    ids.push_back(added.back());
  }
  return added;
}

TEST_F(Gpt2Test, CachedStepsMatchTheWholeWindow) {
  Gpt2 model(small(), runtime::Context::cpu(), 16);
  model.randomize_weights(3);
  const std::vector<std::int64_t> prompt = {7, 42, 3};
  const auto cached = nn::generate(model, prompt, 13, {.greedy = true});
  EXPECT_EQ(cached, greedy_full_window(model, prompt, 13));
  // The step's logits are the whole window's last row (within rounding: other reduction
  // lengths), and a second sequence overwrites the first one's cache rows.
  std::vector<double> stepped;
  const std::vector<std::int64_t> other = {99, 0, 5, 61, 8};
  for (std::size_t p = 0; p < other.size(); ++p) stepped = model.step(other[p], static_cast<std::int64_t>(p));
  const auto full = model.last_logits(other);
  ASSERT_EQ(stepped.size(), full.size());
  for (std::size_t v = 0; v < full.size(); ++v) EXPECT_NEAR(stepped[v], full[v], 1e-5) << v;
  EXPECT_THROW(model.step(1, 16), RuntimeUsageError);
  EXPECT_THROW(model.step(100, 0), RuntimeUsageError);
}

TEST_F(Gpt2Test, SamplingIsSeededAndDeterministic) {
  Gpt2 model(small(), runtime::Context::cpu(), 16);
  model.load_weights(io::SafetensorsFile::open(fixture("bare.safetensors")));
  const nn::SamplingOptions hot{.greedy = false, .top_k = 20, .temperature = 1.5, .seed = 42};
  const auto a = nn::generate(model, read_ids("ids.txt"), 5, hot);
  EXPECT_EQ(a, nn::generate(model, read_ids("ids.txt"), 5, hot));
  for (auto id : a) EXPECT_TRUE(id >= 0 && id < 100) << id;
  // top_k = 1 is greedy whatever the temperature and seed.
  EXPECT_EQ(nn::generate(model, read_ids("ids.txt"), 4,
                         {.greedy = false, .top_k = 1, .temperature = 3, .seed = 9}),
            read_ids("greedy.txt"));
}

TEST_F(Gpt2Test, RandomWeightsAreSeeded) {
  Gpt2 model(small(), runtime::Context::cpu(), 5);
  const std::vector<std::int64_t> ids = {3, 1, 4};
  model.randomize_weights(5);
  const auto a = model.logits(ids);
  model.load_weights(io::SafetensorsFile::open(fixture("bare.safetensors")));
  EXPECT_NE(model.logits(ids), a);
  model.randomize_weights(5);
  EXPECT_EQ(model.logits(ids), a);
  for (double v : a) EXPECT_TRUE(std::isfinite(v) && v != 0) << v;
}

// The cache's pieces on a tiny table: gather_at reads the row at a run-time index, write_at
// writes it into the cache row at another and keeps the rows written before.
TEST(NnIndexOps, GatherAndWriteAtRunTimeIndices) {
  reset_tensor_state();
  std::vector<double> cells(15);
  for (std::size_t k = 0; k < cells.size(); ++k) cells[k] = static_cast<double>(k);
  const ir::StaticSymbol row{ir::fresh_symbol(), 5, "row"}, slot{ir::fresh_symbol(), 4, "slot"};
  const Tensor table = literal("table", cells, {.input = std::vector<std::int64_t>{5}, .output = std::vector<std::int64_t>{3}});
  const Tensor cache = literal("cache", std::vector<double>(12, 0.0),
                               {.batch = std::vector<std::int64_t>{4}, .output = std::vector<std::int64_t>{3}});
  const Tensor written = nn::write_at(nn::gather_at(table, row), cache, slot);
  runtime::Context ctx = runtime::Context::cpu();
  const runtime::Routine r = train::compile_forward(ctx, {written}, "write_row");
  const auto run = [&](std::int64_t at_row, std::int64_t at_slot) {
    std::vector<std::int64_t> statics;
    for (const auto& s : r.statics()) statics.push_back(s.symbol == row.symbol ? at_row : at_slot);
    ctx.run(r, statics);
    return ctx.get_values(cache.value());
  };
  // table is [3 <- 5] (memory [3][5]): row 2 holds 2, 7, 12.
  EXPECT_EQ(run(2, 1), (std::vector<double>{0, 0, 0, 2, 7, 12, 0, 0, 0, 0, 0, 0}));
  EXPECT_EQ(run(4, 3), (std::vector<double>{0, 0, 0, 2, 7, 12, 0, 0, 0, 4, 9, 14}));
  EXPECT_THROW(run(5, 0), RuntimeUsageError);  // the index checked against its range
  EXPECT_THROW(nn::write_at(table, table + table, slot), RuntimeUsageError);  // not a host literal
}

TEST(Gpt2Sampler, TopKSamplesOnlyTheTopK) {
  nn::TokenSampler s({.greedy = false, .top_k = 2, .temperature = 1.0, .seed = 1});
  const std::vector<double> logits = {0.0, 5.0, -1.0, 4.5, 1.0};
  int seen[5] = {};
  for (int i = 0; i < 200; ++i) ++seen[s.next(logits)];
  EXPECT_EQ(seen[0] + seen[2] + seen[4], 0);
  EXPECT_GT(seen[1], 0);
  EXPECT_GT(seen[3], 0);
  nn::TokenSampler greedy({});
  EXPECT_EQ(greedy.next(logits), 1);
}

TEST(Gpt2Sampler, RejectsBadSettings) {
  try {
    nn::TokenSampler s({.greedy = false, .temperature = 0});
    FAIL() << "no error";
  } catch (const RuntimeUsageError& e) {
    EXPECT_NE(std::string(e.what()).find("temperature must be > 0"), std::string::npos);
  }
  EXPECT_THROW(nn::TokenSampler({.greedy = false, .top_k = -1}), RuntimeUsageError);
}

TEST(Gpt2Config, ReadsJsonAndDefaults) {
  const auto c = nn::parse_gpt2_config(
      R"({"n_ctx": 64, "n_embd": 48, "nested": {"n_embd": 7, "x": [1, {"y": 2}]}, "n_head": 6,
          "n_layer": 3, "vocab_size": 77, "layer_norm_epsilon": 1e-6, "name": "x"})", "inline");
  EXPECT_EQ(c.n_positions, 64);
  EXPECT_EQ(c.n_embd, 48);
  EXPECT_EQ(c.n_head, 6);
  EXPECT_EQ(c.n_layer, 3);
  EXPECT_EQ(c.vocab_size, 77);
  EXPECT_DOUBLE_EQ(c.layer_norm_epsilon, 1e-6);
  const auto d = nn::find_gpt2_config(std::nullopt, std::nullopt);
  EXPECT_EQ(d.vocab_size, 50257);
  EXPECT_EQ(d.n_positions, 1024);
  EXPECT_EQ(d.n_embd, 768);
  EXPECT_EQ(d.n_layer, 12);
  EXPECT_EQ(d.n_head, 12);
}

TEST(Gpt2Config, RejectsBadJson) {
  const auto expect_format_error = [](const std::string& text, const std::string& part) {
    try {
      nn::parse_gpt2_config(text, "cfg.json");
      FAIL() << "no error for " << text;
    } catch (const FormatError& e) {
      EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
    }
  };
  expect_format_error(R"({"n_embd": 30, "n_head": 4})", "multiple of n_head");
  expect_format_error(R"({"n_layer": 2.5})", "n_layer must be a positive integer");
  expect_format_error(R"({"n_layer": 2)", "cfg.json: invalid JSON");
  expect_format_error("[1]", "invalid JSON");
  EXPECT_THROW(nn::read_gpt2_config("/nonexistent/config.json"), IoError);
}

void expect_load_error(const Gpt2Config& config, const io::SafetensorsFile& file,
                       const std::string& part) {
  Gpt2 model(config, runtime::Context::cpu(), 4);
  try {
    model.load_weights(file);
    FAIL() << "no error, expected: " << part;
  } catch (const FormatError& e) {
    EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
  }
}

TEST_F(Gpt2Test, MissingTensorIsAFormatError) {
  auto file = edited_checkpoint([](auto& ts) {
    std::erase_if(ts, [](const auto& t) { return t.name == "h.1.mlp.c_fc.bias"; });
  });
  expect_load_error(small(), file, "missing tensor 'h.1.mlp.c_fc.bias' (expected shape [128])");
}

TEST_F(Gpt2Test, MisShapedTensorIsAFormatError) {
  auto file = edited_checkpoint([](auto& ts) {
    for (auto& t : ts)
      if (t.name == "h.0.attn.c_attn.weight") {
        t.shape = {32, 95};
        t.bytes = t.bytes.first(32 * 95 * 4);
      }
  });
  expect_load_error(small(), file,
                    "tensor 'h.0.attn.c_attn.weight' has shape [32, 95], expected [32, 96]");
}

TEST_F(Gpt2Test, AFailedLoadLeavesTheWeightsAsTheyWere) {
  auto ctx = runtime::Context::interpreter();
  Gpt2 model(small(), ctx, 4);
  model.load_weights(io::SafetensorsFile::open(fixture("bare.safetensors")));
  const nn::Gpt2Blocks& b = model.blocks();
  const std::vector<Tensor> watched{b.wte.table, b.h.front().attn.q.w, b.h.back().fc.w, b.ln_f.gamma};
  std::vector<std::vector<std::byte>> before;
  for (const Tensor& t : watched) before.push_back(ctx.get_bytes(t.value()));
  // Other values in every tensor, and the last one missing: its absence is found at the end.
  std::vector<std::vector<float>> halves;
  auto file = edited_checkpoint([&](auto& ts) {
    std::erase_if(ts, [](const auto& t) { return t.name == "ln_f.bias"; });
    for (auto& t : ts) {
      halves.emplace_back(t.bytes.size() / sizeof(float), 0.5f);
      t.bytes = std::as_bytes(std::span(halves.back()));
    }
  });
  try {
    model.load_weights(file);
    FAIL() << "no error";
  } catch (const FormatError& e) {
    EXPECT_NE(std::string(e.what()).find("missing tensor 'ln_f.bias'"), std::string::npos) << e.what();
  }
  for (std::size_t i = 0; i < watched.size(); ++i)
    EXPECT_TRUE(ctx.get_bytes(watched[i].value()) == before[i]) << watched[i].label() << " changed";
}

TEST_F(Gpt2Test, IntegerTensorsAreNotWeights) {
  const std::vector<std::byte> raw(32 * 8, std::byte{1});
  for (io::SafetensorsDType dtype : {io::SafetensorsDType::BOOL, io::SafetensorsDType::U8,
                                     io::SafetensorsDType::I8, io::SafetensorsDType::I64}) {
    SCOPED_TRACE(io::safetensors_dtype_name(dtype));
    auto file = edited_checkpoint([&](auto& ts) {
      for (auto& t : ts)
        if (t.name == "h.1.ln_2.weight") {
          t.dtype = dtype;
          t.bytes = std::span(raw).first(32 * io::safetensors_dtype_bytes(dtype));
        }
    });
    expect_load_error(small(), file,
                      "tensor 'h.1.ln_2.weight' has dtype " +
                          std::string(io::safetensors_dtype_name(dtype)) + "; weights must be floating");
    reset_tensor_state();
  }
  // Floating dtypes other than F32 load, converted.
  const std::vector<std::uint16_t> ones(32, 0x3C00);  // F16 1.0
  auto half = edited_checkpoint([&](auto& ts) {
    for (auto& t : ts)
      if (t.name == "h.1.ln_2.weight") {
        t.dtype = io::SafetensorsDType::F16;
        t.bytes = std::as_bytes(std::span(ones));
      }
  });
  auto ctx = runtime::Context::interpreter();
  Gpt2 model(small(), ctx, 4);
  model.load_weights(half);
  EXPECT_EQ(ctx.get_values(model.blocks().h[1].ln2.gamma.value()), std::vector<double>(32, 1.0));
}

TEST_F(Gpt2Test, ANonFiniteTensorIsReportedOnce) {
  // c_attn fills three parameters (q, k, v); its one NaN is one tensor with one bad value.
  std::vector<float> c_attn;
  auto file = edited_checkpoint([&](auto& ts) {
    for (auto& t : ts)
      if (t.name == "h.0.attn.c_attn.weight") {
        c_attn.resize(t.bytes.size() / sizeof(float));
        std::memcpy(c_attn.data(), t.bytes.data(), t.bytes.size());
        c_attn[5] = NAN;
        t.bytes = std::as_bytes(std::span(c_attn));
      }
  });
  Gpt2 model(small(), runtime::Context::interpreter(), 4);
  ::testing::internal::CaptureStderr();
  model.load_weights(file);
  const std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(log.find("weights in <edited>: 1 tensors hold values that are NaN or infinite: "
                     "h.0.attn.c_attn.weight (1 of 3072);"),
            std::string::npos) << log;
}

TEST_F(Gpt2Test, WrongConfigNamesTheShapes) {
  Gpt2Config config = small();
  config.vocab_size = 101;
  expect_load_error(config, io::SafetensorsFile::open(fixture("model.safetensors")),
                    "'transformer.wte.weight' has shape [100, 32], expected [101, 32]");
}

TEST_F(Gpt2Test, UntiedHeadAndForeignFilesAreFormatErrors) {
  std::vector<float> head(100 * 32, 0.5f);
  auto untied = edited_checkpoint([&](auto& ts) {
    ts.push_back({"lm_head.weight", io::SafetensorsDType::F32, {100, 32},
                  std::as_bytes(std::span(head))});
  });
  expect_load_error(small(), untied, "'lm_head.weight' differs from 'wte.weight'");
  reset_tensor_state();
  auto foreign = edited_checkpoint([](auto& ts) {
    std::erase_if(ts, [](const auto& t) { return t.name == "wte.weight"; });
  });
  expect_load_error(small(), foreign, "missing tensor 'wte.weight'");
}

TEST_F(Gpt2Test, RejectsBadSequences) {
  Gpt2 model(small(), runtime::Context::cpu(), 4);
  model.load_weights(io::SafetensorsFile::open(fixture("bare.safetensors")));
  const std::vector<std::int64_t> too_long = {1, 2, 3, 4, 5}, bad_id = {1, 100};
  EXPECT_THROW(model.logits(too_long), RuntimeUsageError);
  try {
    model.logits(bad_id);
    FAIL() << "no error";
  } catch (const RuntimeUsageError& e) {
    EXPECT_NE(std::string(e.what()).find("token id 100 at position 1"), std::string::npos);
  }
  EXPECT_THROW(Gpt2(small(), runtime::Context::cpu(), 17), RuntimeUsageError);
}

}  // namespace
}  // namespace cannl
