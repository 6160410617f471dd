#pragma once
// The one parser of numbers a person writes: command-line options and
// environment variables alike (issue 49). Strict: the whole text is the
// number (no sign where a count is asked, no suffix, no spaces), finite, one a
// double or a 64-bit count can hold (1e400 and 1e-400 are refused, not turned
// into infinity or zero), and within the range given. The message is one line
// naming the option or variable.
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

namespace xfer::mem {

// What the text should have been, in a message's words: "an integer from 1
// to 64", "(0, 3600] seconds".
struct number_range {
  double lo, hi;
  bool lo_open = false, hi_open = false;
  std::string_view words;  // the range as the message gives it
};

// Throws std::invalid_argument "NAME: WHY" (NAME: "--max-time", "XFER_SPIN_US").
double parse_real(std::string_view text, std::string_view name, const number_range& range);
// Digits only, from lo to hi. Throws std::invalid_argument "NAME=TEXT: expected
// an integer from LO to HI" (NAME: an environment variable).
std::uint64_t parse_count(std::string_view text, std::string_view name, std::uint64_t lo, std::uint64_t hi);

// The reason parse_real would give, or "" when the text is good (for
// validators that add their own prefix).
std::string real_problem(std::string_view text, const number_range& range);

}  // namespace xfer::mem
