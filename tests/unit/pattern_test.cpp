#include <gtest/gtest.h>
#include <vector>
#include <xfer/core/errors.hpp>
#include <xfer/core/pattern.hpp>

using namespace xfer;

TEST(Pattern, RoundTripsAtOddSizes) {
  for (std::size_t n : {1u, 3u, 7u, 8u, 9u, 63u, 4097u}) {
    std::vector<unsigned char> buf(n);
    fill_pattern(buf.data(), n, 5);
    EXPECT_FALSE(find_pattern_mismatch(buf.data(), n, 5).has_value()) << n;
  }
}

TEST(Pattern, HasNoZeroByteSoPoisonNeverPasses) {
  std::vector<unsigned char> buf(1 << 16);
  fill_pattern(buf.data(), buf.size(), 3);
  for (unsigned char c : buf) ASSERT_NE(c, 0);
  poison(buf.data(), 1);
  EXPECT_EQ(find_pattern_mismatch(buf.data(), buf.size(), 3), std::optional<std::size_t>(0));
}

TEST(Pattern, FindsTheFirstWrongByte) {
  std::vector<unsigned char> buf(1000);
  fill_pattern(buf.data(), buf.size(), 1);
  buf[777] ^= 0x40;
  EXPECT_EQ(find_pattern_mismatch(buf.data(), buf.size(), 1), std::optional<std::size_t>(777));
  EXPECT_THROW(check_pattern(buf.data(), buf.size(), 1, "test"), verification_error);
}

TEST(Pattern, SeedsAndPositionsDiffer) {
  std::vector<unsigned char> a(64), b(64);
  fill_pattern(a.data(), 64, 1);
  fill_pattern(b.data(), 64, 2);
  EXPECT_NE(a, b);
  // A buffer shifted by one word must not verify (catches offset bugs).
  EXPECT_TRUE(find_pattern_mismatch(a.data() + 8, 56, 1).has_value());
}
