#include <algorithm>
#include <gtest/gtest.h>
#include <vector>
#include <xfer/core/errors.hpp>
#include <xfer/core/pattern.hpp>
#include <xfer/core/sample_check.hpp>

using namespace xfer;

TEST(Pattern, RoundTripsAtOddSizes) {
  for (std::size_t n : {1u, 3u, 7u, 8u, 9u, 63u, 4097u}) {
    std::vector<unsigned char> buf(n);
    fill_pattern(buf.data(), n, 5);
    EXPECT_FALSE(find_pattern_mismatch(buf.data(), n, 5).has_value()) << n;
  }
}

TEST(Pattern, FilledInPiecesAtAnyOffsetEqualsFilledWhole) {
  std::vector<unsigned char> whole(1000), pieces(1000, 0);
  fill_pattern(whole.data(), whole.size(), 9);
  for (std::size_t from = 0, len = 1; from < pieces.size(); from += len, len = len % 13 + 3)
    fill_pattern(pieces.data() + from, std::min(len, pieces.size() - from), 9, from);
  EXPECT_EQ(pieces, whole);
  // A piece filled from the wrong place does not verify.
  fill_pattern(pieces.data() + 64, 64, 9, 72);
  EXPECT_EQ(find_pattern_mismatch(pieces.data(), pieces.size(), 9), std::optional<std::size_t>(64));
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

// The table core's verification (src/core/verify.cpp) poisons and checks by.
TEST(SampleDestinations, EachDirectionChecksWhatItsSampleWrites) {
  for (direction d : {direction::h2d, direction::d2h, direction::rw, direction::bidir, direction::d2d}) {
    const auto dests = sample_destinations(d);
    ASSERT_FALSE(dests.empty()) << to_string(d);
    // Something is poisoned, or a copy that never ran could pass on what an earlier one left.
    EXPECT_TRUE(std::any_of(dests.begin(), dests.end(), [](const auto& x) { return x.poisoned; })) << to_string(d);
  }
  EXPECT_TRUE(sample_destinations(direction::h2d)[0].on_device);
  EXPECT_FALSE(sample_destinations(direction::d2h)[0].on_device);
  // rw reads back into its own source: its host side keeps the pattern, unpoisoned.
  const auto rw = sample_destinations(direction::rw);
  ASSERT_EQ(rw.size(), 2u);
  EXPECT_FALSE(rw[1].on_device);
  EXPECT_FALSE(rw[1].poisoned);
  EXPECT_EQ(rw[1].seed, seed_h2d);
  // bidir: each direction lands on its own side with its own source's seed.
  const auto bidir = sample_destinations(direction::bidir);
  ASSERT_EQ(bidir.size(), 2u);
  EXPECT_NE(bidir[0].on_device, bidir[1].on_device);
  EXPECT_NE(bidir[0].seed, bidir[1].seed);
  EXPECT_EQ(bidir[1].buffer, 1);  // host b: host a is the h2d source
  EXPECT_EQ(sample_destinations(direction::d2d)[0].buffer, 1);
}
