#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <fmt/format.h>
#include <xfer/mem/numbers.hpp>

namespace xfer::mem {

std::string real_problem(std::string_view text, const number_range& range) {
  const std::string s(text);
  if (s.empty()) return "the value is empty";
  // strtod skips leading spaces and reads hex, "inf" and "nan": refuse them all.
  if (s.find_first_not_of("0123456789.eE+-") != std::string::npos) return fmt::format("{} is not a number", s);
  errno = 0;
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (end == s.c_str() || *end != '\0') return fmt::format("{} is not a number", s);
  // ERANGE: too large for a double (1e400) or too small to be told from zero (1e-400).
  if (errno == ERANGE || !std::isfinite(v))
    return fmt::format("{} is not a number this tool can hold: give one within {}", s, range.words);
  const bool below = range.lo_open ? v <= range.lo : v < range.lo;
  const bool above = range.hi_open ? v >= range.hi : v > range.hi;
  if (below || above) return fmt::format("{} is out of range {}", s, range.words);
  return {};
}

double parse_real(std::string_view text, std::string_view name, const number_range& range) {
  if (auto why = real_problem(text, range); !why.empty()) throw std::invalid_argument(fmt::format("{}: {}", name, why));
  return std::strtod(std::string(text).c_str(), nullptr);
}

std::uint64_t parse_count(std::string_view text, std::string_view name, std::uint64_t lo, std::uint64_t hi) {
  const std::string s(text);
  const auto refuse = [&] {
    return std::invalid_argument(hi == 1 && lo == 0 ? fmt::format("{}={}: expected 0 or 1", name, s)
                                                    : fmt::format("{}={}: expected an integer from {} to {}", name, s, lo, hi));
  };
  if (s.empty() || s.find_first_not_of("0123456789") != std::string::npos) throw refuse();
  errno = 0;
  char* end = nullptr;
  const unsigned long long n = std::strtoull(s.c_str(), &end, 10);
  if (errno != 0 || *end != '\0' || n < lo || n > hi) throw refuse();
  return n;
}

}  // namespace xfer::mem
