#include <gtest/gtest.h>

#include <stdexcept>
#include <xfer/cpu/wc_check.hpp>

namespace {

using xfer::cpu::judge_write_combining;

TEST(CpuWriteCombining, SeveralTimesSlowerReadsMeanItIsInEffect) {
  const auto v = judge_write_combining(10.0, 0.25, "pinned-wc");
  EXPECT_TRUE(v.in_effect);
  EXPECT_DOUBLE_EQ(v.slowdown, 40.0);
  EXPECT_NE(v.text.find("IS in effect"), std::string::npos) << v.text;
  EXPECT_NE(v.text.find("pinned-wc"), std::string::npos) << v.text;
}

TEST(CpuWriteCombining, CachedSpeedReadsAreReportedPlainlyAsNotInEffect) {
  const auto v = judge_write_combining(10.0, 9.0, "pinned-wc");
  EXPECT_FALSE(v.in_effect);
  EXPECT_NE(v.text.find("NOT to be in effect"), std::string::npos) << v.text;
}

TEST(CpuWriteCombining, ThresholdIsInclusive) {
  EXPECT_TRUE(judge_write_combining(9.0, 3.0, "k").in_effect);
  EXPECT_FALSE(judge_write_combining(8.9, 3.0, "k").in_effect);
  EXPECT_TRUE(judge_write_combining(8.9, 3.0, "k", 2.0).in_effect);
}

TEST(CpuWriteCombining, RejectsBandwidthsThatAreNotPositive) {
  EXPECT_THROW(judge_write_combining(0, 1, "k"), std::invalid_argument);
  EXPECT_THROW(judge_write_combining(1, -1, "k"), std::invalid_argument);
}

}  // namespace
