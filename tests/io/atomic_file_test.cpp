// AtomicFile: a replaced file keeps its permissions, a new one gets the usual 0644 less the umask,
// and a link's target is what is replaced (and whose permissions are kept).
#include "io/atomic_file.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>

#include "io/io_test_util.h"

namespace cannl::io {
namespace {

using testing_util::scratch_dir;
using testing_util::slurp;
using testing_util::spit;

mode_t permissions_of(const std::filesystem::path& path) {
  struct stat info {};
  EXPECT_EQ(::stat(path.c_str(), &info), 0) << path;
  return info.st_mode & 07777;
}

void write_whole(const std::filesystem::path& path, std::string_view contents) {
  AtomicFile out(path);
  out.write(contents);
  out.commit(/*sync_to_disk=*/true);
}

TEST(AtomicFile, NewFilesGetTheUsualPermissions) {
  const auto path = scratch_dir() / "new.bin";
  const mode_t umask = ::umask(0);
  ::umask(umask);
  write_whole(path, "new");
  EXPECT_EQ(permissions_of(path), 0644u & ~umask);
}

TEST(AtomicFile, ReplacedFilesKeepTheirPermissions) {
  const auto dir = scratch_dir();
  for (mode_t mode : {0600u, 0640u, 0755u}) {
    SCOPED_TRACE(mode);
    const auto path = dir / "kept.bin";
    spit(path, "old");
    ASSERT_EQ(::chmod(path.c_str(), mode), 0);
    write_whole(path, "new");
    EXPECT_EQ(slurp(path), "new");
    EXPECT_EQ(permissions_of(path), mode);
  }
}

TEST(AtomicFile, ALinkedFileKeepsItsTargetsPermissions) {
  const auto dir = scratch_dir();
  spit(dir / "target.bin", "old");
  ASSERT_EQ(::chmod((dir / "target.bin").c_str(), 0600), 0);
  std::filesystem::create_symlink("target.bin", dir / "link.bin");
  write_whole(dir / "link.bin", "new");
  EXPECT_TRUE(std::filesystem::is_symlink(dir / "link.bin"));
  EXPECT_EQ(slurp(dir / "target.bin"), "new");
  EXPECT_EQ(permissions_of(dir / "target.bin"), 0600u);
}

}  // namespace
}  // namespace cannl::io
