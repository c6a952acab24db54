// AtomicFile (the one implementation of a file replaced at once): a replaced file keeps its
// permissions, a new one gets the usual 0644 less the umask, a link's target is what is replaced
// (and whose permissions are kept), and a file abandoned before its commit leaves the old one.
#include "cannl/support/atomic_file.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>

#include "cannl/support/error.h"
#include "cannl/support/files.h"
#include "support/config_test_fixture.h"
#include "support/file_permissions.h"

namespace cannl {
namespace {

using AtomicFileTest = testing::ConfigEnvironment;

using testing::permissions_of;

void write_whole(const std::filesystem::path& path, std::string_view contents, files::Durability durability) {
  files::AtomicFile out(path);
  out.write(contents);
  out.commit(durability);
}

std::size_t entries_in(const std::filesystem::path& dir) {
  return static_cast<std::size_t>(std::distance(std::filesystem::directory_iterator(dir), {}));
}

TEST_F(AtomicFileTest, NewFilesGetTheUsualPermissions) {
  const auto path = temp_dir_ / "new.bin";
  const mode_t umask = ::umask(0);
  ::umask(umask);
  write_whole(path, "new", files::Durability::survives_power_loss);
  EXPECT_EQ(permissions_of(path), 0644u & ~umask);
}

TEST_F(AtomicFileTest, ReplacedFilesKeepTheirPermissionsAtEveryDurability) {
  for (auto durability : {files::Durability::unflushed, files::Durability::complete_file,
                          files::Durability::survives_power_loss})
    for (mode_t mode : {0600u, 0640u, 0755u}) {
      SCOPED_TRACE(mode);
      const auto path = temp_dir_ / "kept.bin";
      files::write_atomically(path, "old");
      ASSERT_EQ(::chmod(path.c_str(), mode), 0);
      write_whole(path, "new", durability);
      EXPECT_EQ(files::read_file(path), "new");
      EXPECT_EQ(permissions_of(path), mode);
    }
  EXPECT_EQ(entries_in(temp_dir_), 1u) << "no temporary file left";
}

TEST_F(AtomicFileTest, ALinkedFileKeepsItsTargetsPermissions) {
  files::write_atomically(temp_dir_ / "target.bin", "old");
  ASSERT_EQ(::chmod((temp_dir_ / "target.bin").c_str(), 0600), 0);
  std::filesystem::create_symlink("target.bin", temp_dir_ / "link.bin");
  write_whole(temp_dir_ / "link.bin", "new", files::Durability::complete_file);
  EXPECT_TRUE(std::filesystem::is_symlink(temp_dir_ / "link.bin"));
  EXPECT_EQ(files::read_file(temp_dir_ / "target.bin"), "new");
  EXPECT_EQ(permissions_of(temp_dir_ / "target.bin"), 0600u);
}

TEST_F(AtomicFileTest, AFileNotCommittedLeavesTheOldOneAndNoTemporary) {
  const auto path = temp_dir_ / "ckpt.bin";
  files::write_atomically(path, "old");
  {
    files::AtomicFile out(path);
    out.write("half of the new");
    EXPECT_TRUE(std::filesystem::exists(out.temporary_path()));
  }
  EXPECT_EQ(files::read_file(path), "old");
  EXPECT_EQ(entries_in(temp_dir_), 1u);
}

TEST_F(AtomicFileTest, ACommittedFileTakesNoMoreWrites) {
  files::AtomicFile out(temp_dir_ / "once.bin");
  out.commit(files::Durability::unflushed);
  try {
    out.write("more");
    ADD_FAILURE() << "expected IoError";
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find("after it was committed"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace cannl
