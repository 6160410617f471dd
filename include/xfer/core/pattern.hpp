#pragma once
// The known, non-zero, position-dependent pattern every route moves, so a
// check can tell a real transfer from stale or zeroed memory.
#include <cstddef>
#include <cstdint>
#include <optional>

namespace xfer {

void fill_pattern(void* dst, std::size_t bytes, std::uint64_t seed);
// Bytes [from, from + bytes) of the same pattern: a buffer filled in pieces, each straight
// into its place (the block route's scattered source blocks), equals one filled whole.
void fill_pattern(void* dst, std::size_t bytes, std::uint64_t seed, std::size_t from);
// Offset of the first byte that differs from the pattern, if any.
std::optional<std::size_t> find_pattern_mismatch(const void* src, std::size_t bytes, std::uint64_t seed);
// Throws verification_error saying where and what, naming `what`.
void check_pattern(const void* src, std::size_t bytes, std::uint64_t seed, const char* what);
// Fills with a byte pattern that can never equal a pattern buffer (for poisoning destinations).
void poison(void* dst, std::size_t bytes);

}  // namespace xfer
