#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <stdexcept>
#include <xfer/cpu/break_even.hpp>

namespace {

using xfer::cpu::break_even;
using xfer::cpu::compute_break_even;

// Seed 004's laptop: 32 MB, regular first run 22 ms then 3.8 GB/s; write-combined
// first run 81 ms then 5.7 GB/s: "around 20 runs" to break even.
TEST(CpuBreakEven, ReproducesTheSeedsTwentyRuns) {
  const double bytes = 32e6;
  const auto b = compute_break_even(0.081, bytes / 5.7e9, 0.022, bytes / 3.8e9);
  ASSERT_EQ(b.outcome, break_even::verdict::after);
  EXPECT_NEAR(b.reuses, 0.059 / (bytes / 3.8e9 - bytes / 5.7e9), 1e-9);
  EXPECT_NEAR(b.reuses, 21.0, 0.1);  // the seed rounds this to "around 20"
  EXPECT_EQ(to_string(b), "22");  // whole reuses, rounded up
}

TEST(CpuBreakEven, ExactFixedInputs) {
  // 10 ms more on first use, 2 ms saved per run: 5 reuses exactly.
  auto b = compute_break_even(0.030, 0.003, 0.020, 0.005);
  EXPECT_EQ(b.outcome, break_even::verdict::after);
  EXPECT_DOUBLE_EQ(b.reuses, 5.0);
  EXPECT_EQ(to_string(b), "5");
  b = compute_break_even(0.0305, 0.003, 0.020, 0.005);
  EXPECT_DOUBLE_EQ(b.reuses, 5.25);
  EXPECT_EQ(to_string(b), "6");
}

TEST(CpuBreakEven, CheaperFirstUseAndNoSlowerIsImmediate) {
  EXPECT_EQ(compute_break_even(0.010, 0.004, 0.020, 0.005).outcome, break_even::verdict::immediate);
  EXPECT_EQ(compute_break_even(0.020, 0.005, 0.020, 0.005).outcome, break_even::verdict::immediate);
  EXPECT_EQ(to_string(compute_break_even(0.010, 0.004, 0.020, 0.005)), "0");
}

TEST(CpuBreakEven, NoFasterInSteadyStateIsNever) {
  // Costlier first use and slower after: never.
  EXPECT_EQ(compute_break_even(0.030, 0.006, 0.020, 0.005).outcome, break_even::verdict::never);
  // Costlier first use, equally fast after: reuse never pays it back.
  EXPECT_EQ(compute_break_even(0.030, 0.005, 0.020, 0.005).outcome, break_even::verdict::never);
  // Cheaper first use but slower after: reuse only widens regular memory's lead.
  EXPECT_EQ(compute_break_even(0.010, 0.006, 0.020, 0.005).outcome, break_even::verdict::never);
  EXPECT_EQ(to_string(compute_break_even(0.030, 0.006, 0.020, 0.005)), "never");
}

TEST(CpuBreakEven, RejectsNegativeOrNonFiniteTimes) {
  EXPECT_THROW(compute_break_even(-1, 0.001, 0.001, 0.001), std::invalid_argument);
  EXPECT_THROW(compute_break_even(0.001, std::nan(""), 0.001, 0.001), std::invalid_argument);
  EXPECT_THROW(compute_break_even(0.001, 0.001, std::numeric_limits<double>::infinity(), 0.001),
               std::invalid_argument);
}

}  // namespace
