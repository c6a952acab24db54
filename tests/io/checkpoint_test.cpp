// Checkpoints: bit-exact restore through the C backend, namespaces side by side, interrupted
// writes (an exception halfway, a process killed halfway) leaving the previous file intact, and
// mismatches reported with both sides.
#include "cannl/io/checkpoint.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>

#include "cannl/support/error.h"
#include "cannl/tensor/autodiff.h"
#include "io/io_test_util.h"

namespace cannl::io {
namespace {

using Dims = std::vector<std::int64_t>;
using testing_util::expect_error;
using testing_util::scratch_dir;
using testing_util::slurp;

class Checkpoint : public testing::Test {
 protected:
  void SetUp() override { reset_tensor_state(); }
};

/// A two-layer model whose loss depends on every parameter; `dtype` is the parameters' precision.
Tensor small_model(const std::string& suffix = "", std::int64_t hidden = 4,
                   std::optional<ir::DType> dtype = std::nullopt) {
  Tensor x = literal("x" + suffix, {1, -2, 3, 0.5, 2, -1}, {.batch = Dims{2}, .output = Dims{3}});
  Tensor w1 = param("w1", {.input = Dims{3}, .output = Dims{hidden}, .dtype = dtype});
  Tensor b1 = param("b1", {.output = Dims{hidden}, .init = {.kind = InitKind::Constant, .value = 0.5}, .dtype = dtype});
  Tensor w2 = param("w2", {.input = Dims{hidden}, .output = Dims{1}, .dtype = dtype});
  return einsum("...|... => 0", relu(w2 * relu(w1 * x + b1)));
}

/// Initializes the parameters and runs one forward/backward pass so values and grads are set.
void upload_literals(runtime::Context& ctx, const Tensor& loss) {
  for (const Tensor& leaf : literals_of({loss})) ctx.set_values(leaf.value(), *leaf.impl().host_values);
}

void init_and_step(runtime::Context& ctx, const Tensor& loss) {
  auto init = ctx.compile(init_params_code(params_of({loss})), "init");
  auto step = ctx.compile(grad_update_code(loss), "grad_step");
  upload_literals(ctx, loss);
  ctx.run(init);
  ctx.run(step);
}

const ir::NodeRef& node_named(const std::vector<CheckpointEntry>& entries, const std::string& name) {
  for (const auto& entry : entries) {
    if (entry.name == name) return entry.node;
  }
  throw std::runtime_error("no entry " + name);
}

std::vector<ir::NodeRef> grads_of(const Tensor& loss) {
  std::vector<ir::NodeRef> grads;
  for (const Tensor& p : params_of({loss})) grads.push_back(p.grad());
  return grads;
}

TEST_F(Checkpoint, RestoresBitExactlyThroughTheCBackend) {
  const auto path = scratch_dir() / "model.safetensors";
  for (ir::DType dtype : {ir::DType::F32, ir::DType::BF16, ir::DType::FP8, ir::DType::F64}) {
    SCOPED_TRACE(ir::dtype_name(dtype));
    reset_tensor_state();
    Tensor loss = small_model("", 4, dtype);
    auto entries = checkpoint_entries("model", {loss}, grads_of(loss));
    ASSERT_EQ(entries.size(), 6u);
    EXPECT_EQ(entries[0].name.rfind("model/", 0), 0u);
    auto ctx = runtime::Context::cpu();
    init_and_step(ctx, loss);
    save_checkpoint(ctx, entries, path);

    auto fresh = runtime::Context::cpu();
    restore_checkpoint(fresh, entries, path);
    for (const CheckpointEntry& entry : entries) {
      EXPECT_TRUE(fresh.is_initialized(entry.node));
      EXPECT_EQ(fresh.get_bytes(entry.node), ctx.get_bytes(entry.node)) << entry.name;
    }
    // The restored context computes exactly what the original does.
    auto forward = fresh.compile(forward_code({loss}), "forward");
    upload_literals(fresh, loss);
    fresh.run(forward);
    auto again = ctx.compile(forward_code({loss}), "forward");
    ctx.run(again);
    EXPECT_EQ(fresh.get_bytes(loss.value()), ctx.get_bytes(loss.value()));
  }
}

TEST_F(Checkpoint, RecordsVersionDTypesAndNamespacesInMetadata) {
  const auto path = scratch_dir() / "meta.safetensors";
  Tensor loss = small_model("", 4, ir::DType::BF16);
  auto entries = checkpoint_entries("model_a", {loss});
  auto ctx = runtime::Context::interpreter();
  init_and_step(ctx, loss);
  save_checkpoint(ctx, entries, path, {{"step", "7"}});
  auto file = SafetensorsFile::open(path);
  const auto& meta = file.metadata();
  EXPECT_EQ(meta.at("cannl_version"), kCannlVersion);
  EXPECT_EQ(meta.at("cannl_checkpoint_version"), kCheckpointFormatVersion);
  EXPECT_EQ(meta.at("cannl_namespaces"), R"(["model_a"])");
  EXPECT_NE(meta.at("cannl_dtypes").find(R"("model_a/w1":"bf16")"), std::string::npos);
  EXPECT_EQ(meta.at("step"), "7");
  EXPECT_EQ(file.info("model_a/w1").dtype, SafetensorsDType::BF16);
  EXPECT_EQ(file.info("model_a/w1").shape, (Dims{4, 3}));
  expect_error<RuntimeUsageError>([&] { save_checkpoint(ctx, entries, path, {{"cannl_x", "1"}}); },
                                  {"\"cannl_x\" is reserved"});
}

TEST_F(Checkpoint, VersionMatchesTheBuild) {
  const std::string cmake = slurp(std::filesystem::path(CANNL_SOURCE_DIR) / "CMakeLists.txt");
  EXPECT_NE(cmake.find("project(cannl VERSION " + std::string(kCannlVersion)), std::string::npos);
}

TEST_F(Checkpoint, TwoModelsSideBySideInOneFile) {
  const auto path = scratch_dir() / "two.safetensors";
  // Both models name their parameters w1, b1, w2: only the namespace tells them apart.
  Tensor loss_a = small_model("_a");
  Tensor loss_b = small_model("_b");
  auto entries_a = checkpoint_entries("model_a", {loss_a});
  auto entries_b = checkpoint_entries("model_b", {loss_b});
  auto ctx = runtime::Context::cpu();
  init_and_step(ctx, loss_a);
  init_and_step(ctx, loss_b);
  const ir::NodeRef& w1_a = node_named(entries_a, "model_a/w1");
  const ir::NodeRef& w1_b = node_named(entries_b, "model_b/w1");
  ctx.set_values(w1_b, std::vector<double>(12, 0.25));  // make b differ from a
  std::vector<CheckpointEntry> both = entries_a;
  both.insert(both.end(), entries_b.begin(), entries_b.end());
  save_checkpoint(ctx, both, path);
  EXPECT_EQ(SafetensorsFile::open(path).metadata().at("cannl_namespaces"), R"(["model_a","model_b"])");

  auto fresh = runtime::Context::cpu();
  restore_checkpoint(fresh, entries_b, path);  // one model alone from the shared file
  restore_checkpoint(fresh, entries_a, path);
  for (const auto& entry : both) EXPECT_EQ(fresh.get_bytes(entry.node), ctx.get_bytes(entry.node)) << entry.name;
  EXPECT_EQ(fresh.get_values(w1_b), std::vector<double>(12, 0.25));
  EXPECT_NE(fresh.get_values(w1_a), std::vector<double>(12, 0.25));

  // Model b loads model a's weights by naming its parameters under a's namespace.
  auto cross = runtime::Context::cpu();
  restore_checkpoint(cross, checkpoint_entries("model_a", {loss_b}), path);
  EXPECT_EQ(cross.get_bytes(w1_b), ctx.get_bytes(w1_a));
}

TEST_F(Checkpoint, DuplicateNamesAreRejected) {
  Tensor loss_a = small_model("_a");
  Tensor loss_b = small_model("_b");
  expect_error<RuntimeUsageError>([&] { checkpoint_entries("m", {loss_a, loss_b}); },
                                  {"checkpoint entry name \"m/", "is used twice", "namespaces"});
}

TEST_F(Checkpoint, MismatchesNameBothSidesAndLeaveTheContextUnchanged) {
  const auto path = scratch_dir() / "m.safetensors";
  Tensor loss = small_model("", 4);
  auto ctx = runtime::Context::interpreter();
  init_and_step(ctx, loss);
  save_checkpoint(ctx, checkpoint_entries("m", {loss}), path);

  reset_tensor_state();
  Tensor wider = small_model("", 5);
  auto fresh = runtime::Context::interpreter();
  auto entries = checkpoint_entries("m", {wider});
  expect_error<FormatError>([&] { restore_checkpoint(fresh, entries, path); },
                            {"m.safetensors", "\"m/w2\"", "shape [1, 4] differs from the node's shape [1, 5]"});
  for (const auto& entry : entries) EXPECT_FALSE(fresh.has_buffer(entry.node)) << entry.name;

  reset_tensor_state();
  Tensor half = small_model("", 4, ir::DType::F16);
  expect_error<FormatError>([&] { restore_checkpoint(fresh, checkpoint_entries("m", {half}), path); },
                            {"\"m/w2\"", "holds f32 (F32) but the node is f16"});
  expect_error<FormatError>([&] { restore_checkpoint(fresh, checkpoint_entries("other", {half}), path); },
                            {"no tensor \"other/w2\"", "\"m/w1\""});
}

TEST_F(Checkpoint, InterruptedSaveLeavesThePreviousCheckpoint) {
  const auto dir = scratch_dir();
  const auto path = dir / "ckpt.safetensors";
  Tensor loss = small_model("", 256);
  auto entries = checkpoint_entries("m", {loss}, grads_of(loss));
  auto ctx = runtime::Context::cpu();
  init_and_step(ctx, loss);
  save_checkpoint(ctx, entries, path);
  const std::string before = slurp(path);
  const ir::NodeRef& w1 = node_named(entries, "m/w1");
  const auto saved_w1 = ctx.get_bytes(w1);

  ctx.run(ctx.compile(grad_update_code(loss), "grad_step2"));
  ctx.set_values(w1, std::vector<double>(256 * 3, 9.0));  // new state to save
  WriteOptions crash{.progress = [](std::uint64_t written, std::uint64_t total) {
    if (written * 2 >= total) throw IoError("simulated power cut");
  }};
  expect_error<IoError>([&] { save_checkpoint(ctx, entries, path, {}, crash); }, {"simulated power cut"});
  EXPECT_EQ(slurp(path), before);
  auto fresh = runtime::Context::cpu();
  restore_checkpoint(fresh, entries, path);
  EXPECT_EQ(fresh.get_bytes(w1), saved_w1);
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir), {}), 1);  // no temporary left
}

TEST_F(Checkpoint, ProcessKilledMidWriteLeavesThePreviousCheckpoint) {
  const auto dir = scratch_dir();
  const auto path = dir / "ckpt.safetensors";
  auto key = ir::make_node("rng_key", ir::DType::U4x32, {2});  // optimizer-like raw state
  // 2.4 MB of counts: several 1 MiB chunks, so the kill lands between two of them.
  constexpr std::int64_t kCounts = 300000;
  auto counts = ir::make_node("counts", ir::DType::I64, {kCounts});
  auto ctx = runtime::Context::interpreter();
  std::vector<std::byte> key_bytes(32);
  for (std::size_t i = 0; i < key_bytes.size(); ++i) key_bytes[i] = static_cast<std::byte>(i * 7 + 1);
  ctx.set_bytes(key, key_bytes);
  ctx.set_values(counts, std::vector<double>(kCounts, 1.0));
  const std::vector<CheckpointEntry> entries{{"opt/rng_key", key}, {"opt/counts", counts}};
  save_checkpoint(ctx, entries, path);
  const std::string before = slurp(path);

  ctx.set_values(counts, std::vector<double>(kCounts, 2.0));
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {  // the child dies halfway through writing, with no chance to clean up
    WriteOptions die{.sync_to_disk = false, .progress = [](std::uint64_t written, std::uint64_t total) {
      if (written * 2 >= total) ::raise(SIGKILL);
    }};
    save_checkpoint(ctx, entries, path, {}, die);
    ::_exit(0);  // not reached
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
  EXPECT_EQ(slurp(path), before);
  // The killed writer left its temporary file, cut short: the write really was interrupted.
  std::vector<std::filesystem::path> leftovers;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.path() != path) leftovers.push_back(e.path());
  ASSERT_EQ(leftovers.size(), 1u);
  const auto partial = std::filesystem::file_size(leftovers[0]);
  EXPECT_GT(partial, before.size() / 2);
  EXPECT_LT(partial, before.size());
  auto fresh = runtime::Context::interpreter();
  restore_checkpoint(fresh, entries, path);
  EXPECT_EQ(fresh.get_bytes(key), key_bytes);
  EXPECT_EQ(fresh.get_values(counts), std::vector<double>(kCounts, 1.0));
  EXPECT_EQ(SafetensorsFile::open(path).info("opt/rng_key").shape, (Dims{2, 4}));
  // The next save of the same file removes the dead writer's leftover and writes the new values.
  save_checkpoint(ctx, entries, path);
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir), {}), 1);
  restore_checkpoint(fresh, entries, path);
  EXPECT_EQ(fresh.get_values(counts), std::vector<double>(kCounts, 2.0));
}

TEST_F(Checkpoint, SavingOverAPrivateCheckpointKeepsItPrivate) {
  const auto path = scratch_dir() / "ckpt.safetensors";
  auto counts = ir::make_node("counts", ir::DType::F32, {3});
  auto ctx = runtime::Context::interpreter();
  ctx.set_values(counts, std::vector<double>{1, 2, 3});
  const std::vector<CheckpointEntry> entries{{"counts", counts}};
  save_checkpoint(ctx, entries, path);
  std::filesystem::permissions(path, std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
  save_checkpoint(ctx, entries, path);
  struct stat info {};
  ASSERT_EQ(::stat(path.c_str(), &info), 0);
  EXPECT_EQ(info.st_mode & 0777, 0600u) << std::oct << (info.st_mode & 0777);
}

TEST_F(Checkpoint, SymlinkedCheckpointKeepsItsLink) {
  const auto dir = scratch_dir();
  std::filesystem::create_directories(dir / "store");
  const auto target = dir / "store" / "run1.safetensors";
  const auto link = dir / "latest.safetensors";
  auto counts = ir::make_node("counts", ir::DType::F32, {3});
  auto ctx = runtime::Context::interpreter();
  ctx.set_values(counts, std::vector<double>{1, 2, 3});
  const std::vector<CheckpointEntry> entries{{"counts", counts}};
  save_checkpoint(ctx, entries, target);
  std::filesystem::create_symlink("store/run1.safetensors", link);
  ctx.set_values(counts, std::vector<double>{4, 5, 6});
  save_checkpoint(ctx, entries, link);
  EXPECT_TRUE(std::filesystem::is_symlink(link)) << "the link was replaced by a regular file";
  auto fresh = runtime::Context::interpreter();
  restore_checkpoint(fresh, entries, target);
  EXPECT_EQ(fresh.get_values(counts), (std::vector<double>{4, 5, 6}));
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir / "store"), {}), 1);
}

}  // namespace
}  // namespace cannl::io
