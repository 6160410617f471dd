#pragma once
// Transfer sizes as people write them: 4, 4K, 1M, 1.5G (binary suffixes), and
// times as the console shows them.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace xfer {

// Throws usage_error naming the text for anything malformed, negative, zero or
// not a whole number of bytes.
std::uint64_t parse_size(std::string_view text);
// A comma-separated list of sizes, each once (a repeat is dropped, in any spelling).
std::vector<std::uint64_t> parse_size_list(std::string_view text);
// Powers of two from min to max inclusive (min rounded up to a power of two).
std::vector<std::uint64_t> pow2_range(std::uint64_t min, std::uint64_t max);
// 1536 -> "1.5K", 1048576 -> "1M": the shortest exact binary spelling, else bytes.
std::string format_size(std::uint64_t bytes);
// For capacities: "23.5 GiB" (two significant decimals at most).
std::string format_capacity(std::uint64_t bytes);
// A duration in the unit that shows it: 2.17e-9 -> "2.17 ns", 1.4e-6 -> "1.40 us",
// 0.25 -> "250.00 ms", 3 -> "3.00 s" (a time never reads 0.00 unless it is 0).
std::string format_duration(double seconds);

}  // namespace xfer
