// libxfer's one writer and bounded reader, for caches (issue 49): a cache is
// written only where it is a small regular file or not there yet, read only
// where it is one, and a null device means "no cache".
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <sstream>
#include <sys/stat.h>
#include <unistd.h>
#include <xfer/mem/files.hpp>

using namespace xfer::mem;
namespace fs = std::filesystem;

namespace {

class CacheFile : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("xfer-files-" + std::to_string(::getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string text_of(const fs::path& p) {
    std::ifstream in(p);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }
  fs::path dir_;
};

}  // namespace

TEST_F(CacheFile, ARegularFileIsWrittenWholeAndReadBack) {
  const auto p = dir_ / "sub" / "cache";
  EXPECT_FALSE(read_cache(p).has_value());  // not there yet: nothing, and no line
  write_cache(p, "key\t1 2 3\n");
  EXPECT_EQ(text_of(p), "key\t1 2 3\n");
  EXPECT_EQ(read_cache(p).value_or(""), "key\t1 2 3\n");
}

TEST_F(CacheFile, AFifoIsNeitherReadNorReplaced) {
  const auto p = dir_ / "fifo";
  ASSERT_EQ(::mkfifo(p.c_str(), 0644), 0);
  EXPECT_FALSE(read_cache(p).has_value());  // returned at once: nothing opened it
  write_cache(p, "key\t1\n");
  struct stat st {};
  ASSERT_EQ(::lstat(p.c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode));
}

TEST_F(CacheFile, AFileTooLargeToBeACacheIsNeitherReadNorRewritten) {
  const auto p = dir_ / "big";
  const std::string big(max_cache_bytes + 1, 'x');
  std::ofstream(p) << big;
  EXPECT_FALSE(read_cache(p).has_value());
  write_cache(p, "key\t1\n");
  EXPECT_EQ(fs::file_size(p), big.size());
}

TEST_F(CacheFile, ALinkIsFollowedAndStaysALink) {
  const auto real = dir_ / "real", link = dir_ / "link";
  std::ofstream(real) << "old\n";
  fs::create_symlink("real", link);
  write_cache(link, "new\n");
  EXPECT_TRUE(fs::is_symlink(link));
  EXPECT_EQ(text_of(real), "new\n");
}

TEST(CacheSetting, OffAndTheNullDeviceMeanNoCache) {
  EXPECT_TRUE(cache_turned_off("off"));
  EXPECT_TRUE(cache_turned_off("/dev/null"));
  EXPECT_FALSE(cache_turned_off("/dev/zero"));  // a device, but not "nothing": ignored with a line instead
  EXPECT_FALSE(cache_turned_off(""));
  EXPECT_FALSE(cache_turned_off("/tmp/some-cache"));
}

TEST(ReadRegularFile, ADeviceIsRefusedWithoutBeingRead) {
  try {
    (void)read_regular_file("/dev/zero", 1 << 20);
    FAIL() << "read /dev/zero";
  } catch (const file_problem& e) {
    EXPECT_STREQ(e.what(), "it is a character device, not a regular file");
  }
}
