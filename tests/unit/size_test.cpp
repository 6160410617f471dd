#include <gtest/gtest.h>
#include <xfer/core/errors.hpp>
#include <xfer/core/size.hpp>

using namespace xfer;

TEST(ParseSize, PlainAndBinarySuffixes) {
  EXPECT_EQ(parse_size("4"), 4u);
  EXPECT_EQ(parse_size("4K"), 4096u);
  EXPECT_EQ(parse_size("4k"), 4096u);
  EXPECT_EQ(parse_size("4KiB"), 4096u);
  EXPECT_EQ(parse_size("4KB"), 4096u);
  EXPECT_EQ(parse_size("1M"), 1048576u);
  EXPECT_EQ(parse_size("1.5G"), 1610612736u);
  EXPECT_EQ(parse_size("2T"), 2ull << 40);
  EXPECT_EQ(parse_size("512B"), 512u);
}

TEST(ParseSize, RejectsMalformed) {
  for (const char* bad : {"12Q", "-4", "0x", "", "0", "1.", ".5K", "1.3", "K", "4KK", "4 K", "1e3", "99999999999999999999",
                          "16777216T"}) {
    EXPECT_THROW(parse_size(bad), usage_error) << "'" << bad << "'";
  }
}

TEST(ParseSize, MessageNamesTheText) {
  try {
    parse_size("12Q");
    FAIL();
  } catch (const usage_error& e) {
    EXPECT_NE(std::string(e.what()).find("'12Q'"), std::string::npos) << e.what();
  }
}

TEST(ParseSize, List) {
  EXPECT_EQ(parse_size_list("4,4K,1M,1.5G"), (std::vector<std::uint64_t>{4, 4096, 1048576, 1610612736}));
  EXPECT_EQ(parse_size_list("4K,4K,4096,1M"), (std::vector<std::uint64_t>{4096, 1048576}));  // each size once
  EXPECT_THROW(parse_size_list("4,,8"), usage_error);
  EXPECT_THROW(parse_size_list("4,"), usage_error);
}

TEST(Pow2Range, InclusiveAndRoundsMinUp) {
  EXPECT_EQ(pow2_range(1, 8), (std::vector<std::uint64_t>{1, 2, 4, 8}));
  EXPECT_EQ(pow2_range(3, 16), (std::vector<std::uint64_t>{4, 8, 16}));
  EXPECT_EQ(pow2_range(1, 1), (std::vector<std::uint64_t>{1}));
  EXPECT_EQ(pow2_range(1, 256ull << 20).size(), 29u);
}

TEST(Pow2Range, RejectsInvertedOrEmpty) {
  EXPECT_THROW(pow2_range(16, 8), usage_error);
  EXPECT_THROW(pow2_range(5, 7), usage_error);
  EXPECT_THROW(pow2_range(0, 7), usage_error);
}

TEST(FormatSize, ShortestExactSpelling) {
  EXPECT_EQ(format_size(1), "1");
  EXPECT_EQ(format_size(1000), "1000");
  EXPECT_EQ(format_size(4096), "4K");
  EXPECT_EQ(format_size(1536), "1.5K");
  EXPECT_EQ(format_size(1610612736), "1.5G");
  EXPECT_EQ(format_size(256ull << 20), "256M");
  EXPECT_EQ(format_size(4097), "4097");
}

TEST(FormatCapacity, ThreeSignificantDigits) {
  EXPECT_EQ(format_capacity(512), "512 B");
  EXPECT_EQ(format_capacity(1536), "1.5 KiB");
  EXPECT_EQ(format_capacity(80ull << 30), "80 GiB");
}
