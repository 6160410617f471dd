// The study's own input checks: what `xferbench cpu` passes it as given,
// checked here so any caller gets the same usage_error before measuring.
#include <gtest/gtest.h>
#include <xfer/core/errors.hpp>
#include <xfer/cpu/options.hpp>

namespace {

using xfer::cpu::options;

std::string error_of(const options& o, std::uint64_t memory = std::uint64_t{1} << 30) {
  try {
    o.check(memory);
  } catch (const xfer::usage_error& e) {
    return e.what();
  }
  return "";
}

TEST(CpuOptions, TheDefaultsAreTheStudysConfiguration) {
  const auto c = options{}.check(std::uint64_t{1} << 30);
  EXPECT_EQ(c.config.sizes, (std::vector<std::uint64_t>{32u << 20}));
  EXPECT_EQ(c.config.runs, 20u);
  EXPECT_EQ(c.config.threads, (std::vector<unsigned>{1}));
  EXPECT_EQ(c.config.ops.size(), 3u);
  EXPECT_TRUE(c.kinds.empty()) << "empty: the study's default kinds";
  EXPECT_TRUE(c.notes.empty());
}

TEST(CpuOptions, RepeatsAreDroppedSizesSortedAndOldKindNamesRespelledWithANote) {
  options o;
  o.sizes = "1M,4K,1024K";
  o.threads = {2, 1, 2};
  o.kinds = {"regular", "pageable", "pinned"};
  const auto c = o.check(std::uint64_t{1} << 30);
  EXPECT_EQ(c.config.sizes, (std::vector<std::uint64_t>{4096, 1 << 20}));
  EXPECT_EQ(c.config.threads, (std::vector<unsigned>{2, 1}));
  EXPECT_EQ(c.kinds, (std::vector<std::string>{"pageable", "pinned"}));
  EXPECT_EQ(c.notes, (std::vector<std::string>{"memory kind 'regular' is spelled 'pageable'"}));
}

TEST(CpuOptions, BadInputIsAUsageErrorNamingTheValue) {
  options o;
  o.runs = 0;
  EXPECT_EQ(error_of(o), "--runs 0 is out of range: give 1 to 1000000");
  o = {};
  o.threads = {};
  EXPECT_EQ(error_of(o), "--threads needs at least one thread count");
  o.threads = {1, 1025};
  EXPECT_EQ(error_of(o), "--threads 1025 is out of range: give 1 to 1024");
  o = {};
  o.ops = {"write"};
  o.methods = {"ntload"};
  EXPECT_NE(error_of(o).find("ntload applies only to read"), std::string::npos);
  o = {};
  o.ops = {"read", "write"};
  o.methods = {"ntload"};
  EXPECT_EQ(error_of(o), "--ops read,write: none of --methods ntload applies to write (ntload applies only to read)")
      << "write was left out without a word";
  o = {};
  o.sizes = "2M";
  EXPECT_EQ(error_of(o, 1 << 20), "size 2M (2097152 B) is larger than this machine's memory (1048576 B)");
  EXPECT_EQ(error_of(o, 0), "") << "memory unknown: nothing to check";
}

// The default ops, not named: the ones a named method does not apply to are
// a note, not an error (`xferbench cpu --methods ntload` measures the reads).
TEST(CpuOptions, DefaultOpsNoMethodAppliesToAreNamedInANote) {
  options o;
  o.methods = {"ntload"};
  const auto c = o.check(std::uint64_t{1} << 30);
  EXPECT_EQ(c.notes, (std::vector<std::string>{
                         "none of --methods ntload applies to write, fill (ntload applies only to read): not measured"}));
  o.methods = {"memcpy", "ntload"};
  EXPECT_TRUE(o.check(std::uint64_t{1} << 30).notes.empty());
}

}  // namespace
