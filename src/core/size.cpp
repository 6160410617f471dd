#include <cmath>
#include <algorithm>
#include <cctype>
#include <fmt/format.h>
#include <limits>
#include <xfer/core/errors.hpp>
#include <xfer/core/size.hpp>

namespace xfer {
namespace {

[[noreturn]] void malformed(std::string_view text, std::string_view why) {
  throw usage_error(fmt::format("invalid size '{}': {} (examples: 4096, 64K, 1M, 1.5G)", text, why));
}

}  // namespace

std::uint64_t parse_size(std::string_view text) {
  std::size_t i = 0;
  unsigned __int128 whole = 0, frac = 0, frac_scale = 1;
  const auto digit = [&](std::size_t k) { return k < text.size() && std::isdigit(static_cast<unsigned char>(text[k])); };
  if (text.empty()) malformed(text, "empty");
  if (text[0] == '-') malformed(text, "negative");
  if (!digit(0)) malformed(text, "must start with a digit");
  constexpr unsigned __int128 cap = std::numeric_limits<std::uint64_t>::max();
  for (; digit(i); ++i) {
    whole = whole * 10 + (text[i] - '0');
    if (whole > cap) malformed(text, "too large");
  }
  if (i < text.size() && text[i] == '.') {
    ++i;
    if (!digit(i)) malformed(text, "a '.' needs digits after it");
    for (; digit(i); ++i) {
      if (frac_scale > cap) malformed(text, "too many decimals");
      frac = frac * 10 + (text[i] - '0');
      frac_scale *= 10;
    }
  }
  unsigned __int128 multiplier = 1;
  if (i < text.size()) {
    switch (std::toupper(static_cast<unsigned char>(text[i]))) {
      case 'K': multiplier = 1ull << 10; break;
      case 'M': multiplier = 1ull << 20; break;
      case 'G': multiplier = 1ull << 30; break;
      case 'T': multiplier = 1ull << 40; break;
      case 'B': multiplier = 1; --i; break;
      default: malformed(text, fmt::format("unknown suffix '{}'", text.substr(i)));
    }
    ++i;
    // Accept the unit spelled out: 4K, 4KB, 4KiB.
    if (i < text.size() && (text[i] == 'i' || text[i] == 'I') && multiplier > 1) ++i;
    if (i < text.size() && (text[i] == 'B' || text[i] == 'b')) ++i;
    if (i != text.size()) malformed(text, fmt::format("unknown suffix '{}'", text.substr(i - 1)));
  }
  const unsigned __int128 scaled = (whole * frac_scale + frac) * multiplier;
  if (scaled % frac_scale != 0) malformed(text, "not a whole number of bytes");
  const unsigned __int128 bytes = scaled / frac_scale;
  if (bytes == 0) malformed(text, "must be at least 1 byte");
  if (bytes > cap) malformed(text, "too large");
  return static_cast<std::uint64_t>(bytes);
}

std::vector<std::uint64_t> parse_size_list(std::string_view text) {
  std::vector<std::uint64_t> sizes;
  std::size_t start = 0;
  while (true) {
    const std::size_t comma = text.find(',', start);
    const auto s = parse_size(text.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start));
    // "4K,4096" is one size: measuring it twice would only repeat a point.
    if (std::find(sizes.begin(), sizes.end(), s) == sizes.end()) sizes.push_back(s);
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return sizes;
}

std::vector<std::uint64_t> pow2_range(std::uint64_t min, std::uint64_t max) {
  if (min == 0) throw usage_error("--min must be at least 1 byte");
  if (min > max) throw usage_error(fmt::format("--min ({}) is above --max ({})", format_size(min), format_size(max)));
  std::vector<std::uint64_t> sizes;
  std::uint64_t s = 1;
  while (s < min) s <<= 1;
  for (; s <= max && s != 0; s <<= 1) sizes.push_back(s);
  if (sizes.empty())
    throw usage_error(fmt::format("no power of two lies between --min {} and --max {}", format_size(min), format_size(max)));
  return sizes;
}

std::string format_size(std::uint64_t bytes) {
  static constexpr const char* units[] = {"", "K", "M", "G", "T"};
  // The largest unit in which the size is a whole number or has one exact decimal (1.5G).
  for (int u = 4; u >= 1; --u) {
    const std::uint64_t unit = 1ull << (10 * u);
    if (bytes < unit) continue;
    if (bytes % unit == 0) return fmt::format("{}{}", bytes / unit, units[u]);
    if ((bytes * 10) % unit == 0 && bytes < (std::numeric_limits<std::uint64_t>::max() / 10))
      return fmt::format("{}.{}{}", bytes / unit, (bytes * 10 / unit) % 10, units[u]);
  }
  return fmt::format("{}", bytes);
}

std::string format_capacity(std::uint64_t bytes) {
  static constexpr const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024 && u < 4) v /= 1024, ++u;
  return u == 0 ? fmt::format("{} B", bytes) : fmt::format("{:.3g} {}", v, units[u]);
}

std::string format_duration(double seconds) {
  const double a = std::abs(seconds);
  if (a == 0 || !std::isfinite(a)) return fmt::format("{:.2f} s", seconds);
  if (a < 1e-6) return fmt::format("{:.2f} ns", seconds * 1e9);
  if (a < 1e-3) return fmt::format("{:.2f} us", seconds * 1e6);
  if (a < 1) return fmt::format("{:.2f} ms", seconds * 1e3);
  return fmt::format("{:.2f} s", seconds);
}

}  // namespace xfer
