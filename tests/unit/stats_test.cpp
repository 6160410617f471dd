#include <cmath>
#include <gtest/gtest.h>
#include <vector>
#include <xfer/core/stats.hpp>

using namespace xfer;

TEST(Summarize, ExactValuesOnKnownInput) {
  const std::vector<double> v{5, 1, 4, 2, 3};
  const summary s = summarize(v);
  EXPECT_EQ(s.count, 5u);
  EXPECT_DOUBLE_EQ(s.min, 1);
  EXPECT_DOUBLE_EQ(s.max, 5);
  EXPECT_DOUBLE_EQ(s.median, 3);
  EXPECT_DOUBLE_EQ(s.mean, 3);
  EXPECT_DOUBLE_EQ(s.p95, 4.8);  // h = 4 * 0.95 = 3.8: 4 + 0.8 * (5 - 4)
  EXPECT_DOUBLE_EQ(s.stddev, std::sqrt(2.5));
}

TEST(Summarize, EvenCountMedianAverages) {
  const std::vector<double> v{1, 2, 3, 10};
  const summary s = summarize(v);
  EXPECT_DOUBLE_EQ(s.median, 2.5);
  EXPECT_DOUBLE_EQ(s.mean, 4);
  EXPECT_DOUBLE_EQ(s.p95, 3 + 0.85 * 7);  // h = 2.85
}

TEST(Summarize, SingleAndEmpty) {
  const std::vector<double> one{7};
  const summary s = summarize(one);
  EXPECT_EQ(s.count, 1u);
  EXPECT_DOUBLE_EQ(s.median, 7);
  EXPECT_DOUBLE_EQ(s.p95, 7);
  EXPECT_DOUBLE_EQ(s.stddev, 0);
  EXPECT_EQ(summarize({}).count, 0u);
}

TEST(MedianCi, UnboundedForFewSamples) {
  const std::vector<double> seven{1, 2, 3, 4, 5, 6, 7};
  EXPECT_TRUE(std::isinf(median_ci_relative(seven)));
}

TEST(MedianCi, OrderStatisticsOfEight) {
  // n = 8: ranks floor(4 - 2.77) = 1 and ceil(4 + 2.77 + 1) = 8, median 4.5.
  const std::vector<double> v{8, 1, 7, 2, 6, 3, 5, 4};
  EXPECT_DOUBLE_EQ(median_ci_relative(v), (8.0 - 1.0) / (2 * 4.5));
}

TEST(MedianCi, NarrowsWithIdenticalSamples) {
  const std::vector<double> v(50, 2.0);
  EXPECT_DOUBLE_EQ(median_ci_relative(v), 0.0);
}

TEST(MedianCi, HundredSamples) {
  std::vector<double> v;
  for (int i = 1; i <= 100; ++i) v.push_back(i);
  // ranks floor(50 - 9.8) = 40 and ceil(50 + 9.8 + 1) = 61; median 50.5
  EXPECT_DOUBLE_EQ(median_ci_relative(v), (61.0 - 40.0) / (2 * 50.5));
}
