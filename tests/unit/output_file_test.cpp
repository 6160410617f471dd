// The one output helper: regular files replaced whole, everything else
// written in place, links kept, the same file under two names refused.
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <future>
#include <gtest/gtest.h>
#include <sstream>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include <xfer/core/errors.hpp>
#include <xfer/core/output_file.hpp>

using namespace xfer;
namespace fs = std::filesystem;

namespace {

class OutputFile : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("xfer-output-" + std::to_string(::getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  static std::string slurp(const fs::path& p) {
    std::ifstream f(p);
    std::stringstream s;
    s << f.rdbuf();
    return s.str();
  }
  std::size_t entries() const {
    std::size_t n = 0;
    for ([[maybe_unused]] auto& e : fs::directory_iterator(dir_)) ++n;
    return n;
  }

  fs::path dir_;
};

// mknod needs CAP_MKNOD (root outside most containers).
bool make_char_device(const fs::path& p, unsigned major_no, unsigned minor_no) {
  return ::mknod(p.c_str(), S_IFCHR | 0666, makedev(major_no, minor_no)) == 0;
}

}  // namespace

TEST_F(OutputFile, RegularFileIsReplacedWholeAndKeepsItsPermissions) {
  const auto p = dir_ / "r.json";
  { std::ofstream(p) << "an older and much longer result that must not survive"; }
  fs::permissions(p, fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read);
  const auto perms_before = fs::status(p).permissions();
  write_output(p, "{}\n");
  EXPECT_EQ(slurp(p), "{}\n");
  EXPECT_EQ(fs::status(p).permissions(), perms_before);
  EXPECT_EQ(entries(), 1u);  // no temporary left beside it
}

TEST_F(OutputFile, MissingFileIsCreated) {
  write_output(dir_ / "new.csv", "a,b\n");
  EXPECT_EQ(slurp(dir_ / "new.csv"), "a,b\n");
  EXPECT_EQ(entries(), 1u);
}

TEST_F(OutputFile, CharacterDeviceIsWrittenInPlaceNotReplaced) {
  const auto dev = dir_ / "null";
  if (!make_char_device(dev, 1, 3)) GTEST_SKIP() << "mknod not permitted here: " << std::strerror(errno);
  EXPECT_NO_THROW(check_writable(dev));
  write_output(dev, "{}\n");
  EXPECT_TRUE(fs::is_character_file(fs::symlink_status(dev)));
  EXPECT_EQ(entries(), 1u);
}

TEST_F(OutputFile, FullDeviceIsAnErrorNamingThePathAndStaysADevice) {
  const auto dev = dir_ / "full";
  if (!make_char_device(dev, 1, 7)) GTEST_SKIP() << "mknod not permitted here: " << std::strerror(errno);
  try {
    write_output(dev, "{}\n");
    FAIL() << "a write to /dev/full's device succeeded";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(dev.string()), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("No space left"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(fs::is_character_file(fs::symlink_status(dev)));
}

TEST_F(OutputFile, FifoIsStreamedToItsReader) {
  const auto fifo = dir_ / "fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0) << std::strerror(errno);
  auto reader = std::async(std::launch::async, [&] { return slurp(fifo); });
  write_output(fifo, "{\"results\": []}\n");
  EXPECT_EQ(reader.get(), "{\"results\": []}\n");
  EXPECT_TRUE(fs::is_fifo(fs::symlink_status(fifo)));
}

TEST_F(OutputFile, SymlinkStaysALinkAndItsTargetGetsTheText) {
  const auto target = dir_ / "target.json", link = dir_ / "link.json";
  { std::ofstream(target) << "old"; }
  fs::create_symlink("target.json", link);
  write_output(link, "new\n");
  EXPECT_TRUE(fs::is_symlink(link));
  EXPECT_EQ(slurp(target), "new\n");
  EXPECT_EQ(entries(), 2u);
}

TEST_F(OutputFile, DanglingSymlinkCreatesItsTarget) {
  const auto link = dir_ / "link.json";
  fs::create_symlink("later.json", link);
  check_writable(link);
  write_output(link, "x\n");
  EXPECT_TRUE(fs::is_symlink(link));
  EXPECT_EQ(slurp(dir_ / "later.json"), "x\n");
}

TEST_F(OutputFile, SameFileUnderTwoSpellingsIsAUsageError) {
  const auto a = (dir_ / "r.json").string();
  const auto b = (dir_ / "." / "sub" / ".." / "r.json").string();
  fs::create_directories(dir_ / "sub");
  // Not there yet: compared by resolved path.
  EXPECT_THROW(check_outputs({{"--json", a}, {"--csv", b}}), usage_error);
  // There: compared by identity, a hard link included.
  { std::ofstream(a) << "x"; }
  fs::create_hard_link(a, dir_ / "hard.json");
  EXPECT_THROW(check_outputs({{"--json", a}, {"--csv", b}}), usage_error);
  EXPECT_THROW(check_outputs({{"--json", a}, {"--csv", (dir_ / "hard.json").string()}}), usage_error);
  fs::create_symlink(a, dir_ / "soft.json");
  EXPECT_THROW(check_outputs({{"--json", (dir_ / "soft.json").string()}, {"--csv", a}}), usage_error);
  EXPECT_NO_THROW(check_outputs({{"--json", a}, {"--csv", (dir_ / "r.csv").string()}}));
  // Standard output, however named.
  EXPECT_THROW(check_outputs({{"--json", "-"}, {"--csv", "-"}}), usage_error);
  EXPECT_THROW(check_outputs({{"--json", "-"}, {"--csv", "/dev/stdout"}}), usage_error);
}

TEST_F(OutputFile, UnusableOutputsAreUsageErrorsNamingOptionAndPath) {
  try {
    check_outputs({{"--json", (dir_ / "no-such-dir" / "r.json").string()}});
    FAIL();
  } catch (const usage_error& e) {
    EXPECT_NE(std::string(e.what()).find("--json: cannot write output file"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("no-such-dir"), std::string::npos) << e.what();
  }
  EXPECT_THROW(check_outputs({{"--csv", dir_.string()}}), usage_error);
  EXPECT_THROW(check_writable(""), usage_error);
  EXPECT_EQ(entries(), 0u);
}

TEST_F(OutputFile, DashIsStandardOutput) {
  EXPECT_TRUE(writes_to_stdout("-"));
  EXPECT_TRUE(writes_to_stdout("/dev/stdout"));
  EXPECT_FALSE(writes_to_stdout(dir_ / "r.json"));
}
