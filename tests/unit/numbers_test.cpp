// The one parser of numbers a person writes (issue 49): strict, finite,
// within range, one line naming the option or variable.
#include <gtest/gtest.h>
#include <stdexcept>
#include <xfer/mem/numbers.hpp>

using namespace xfer::mem;

namespace {
const number_range seconds{0, 3600, true, false, "(0, 3600] seconds"};
}

TEST(Numbers, AGoodValueIsTheValue) {
  EXPECT_DOUBLE_EQ(parse_real("0.5", "--max-time", seconds), 0.5);
  EXPECT_DOUBLE_EQ(parse_real("3600", "--max-time", seconds), 3600);
  EXPECT_DOUBLE_EQ(parse_real("1e-3", "--max-time", seconds), 1e-3);
  EXPECT_EQ(real_problem("2.5E1", seconds), "");
}

// 1e400 became infinity and 1e-400 zero, and the range checks gave up.
TEST(Numbers, WhatADoubleCannotHoldIsRefusedNotRounded) {
  for (const char* text : {"1e400", "-1e400", "1e-400", "1e999999"}) {
    const auto why = real_problem(text, seconds);
    EXPECT_NE(why.find("is not a number this tool can hold"), std::string::npos) << text << ": " << why;
    EXPECT_NE(why.find("(0, 3600] seconds"), std::string::npos) << why;
  }
}

TEST(Numbers, WhatIsNotWrittenAsADecimalNumberIsRefused) {
  for (const char* text : {"", "inf", "-inf", "nan", "NaN", "infinity", "0x10", " 1", "1 ", "1s", "1e", "--1", "1,5"})
    EXPECT_NE(real_problem(text, seconds), "") << '"' << text << '"';
}

TEST(Numbers, TheRangesEndsAreOpenOrClosedAsSaid) {
  EXPECT_NE(real_problem("0", seconds), "");  // open below
  EXPECT_EQ(real_problem("3600", seconds), "");  // closed above
  EXPECT_NE(real_problem("3600.0001", seconds), "");
  const number_range fraction{0, 1, false, true, "[0, 1)"};
  EXPECT_EQ(real_problem("0", fraction), "");
  EXPECT_NE(real_problem("1", fraction), "");
  EXPECT_NE(real_problem("-0.5", fraction), "");
}

TEST(Numbers, TheMessageNamesTheOptionAndTheValue) {
  try {
    parse_real("1e400", "--warmup", {0, 60, false, false, "[0, 60] seconds"});
    FAIL() << "accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "--warmup: 1e400 is not a number this tool can hold: give one within [0, 60] seconds");
  }
}

TEST(Numbers, ACountIsDigitsWithinItsBounds) {
  EXPECT_EQ(parse_count("64", "XFER_X", 1, 64), 64u);
  EXPECT_EQ(parse_count("0", "XFER_X", 0, 1), 0u);
  for (const char* text : {"", "-1", "+1", " 1", "1e3", "0x10", "65", "99999999999999999999999"})
    EXPECT_THROW(parse_count(text, "XFER_X", 1, 64), std::invalid_argument) << text;
  try {
    parse_count("99999999999999999999999", "XFER_STAGED_THREADS", 1, 64);
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "XFER_STAGED_THREADS=99999999999999999999999: expected an integer from 1 to 64");
  }
  try {
    parse_count("2", "XFER_STAGED_SHARED", 0, 1);
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "XFER_STAGED_SHARED=2: expected 0 or 1");
  }
}
