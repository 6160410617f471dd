#pragma once
// How the pack way (ways.cpp) shares one group's CPU copy among its team.
// The group's bytes are cut evenly, not its blocks: with 2 MiB blocks a
// 4 MiB group has 2 blocks, and a cut by whole blocks left all but two of
// the team idle (the pageable pack way fell from 21 GB/s at 16 KiB blocks to
// 12 at 2 MiB on a GPU machine). A member may so take part of a block.
#include <algorithm>
#include <cstddef>

namespace xfer::mem::detail {

// Bytes [begin, end) of the staging buffer, where pair i's block lies at
// i * block_bytes (the pack way's staging is in pair order).
struct staging_range {
  std::size_t begin = 0, end = 0;
};

// Member `member` of `members`' even share of `group`. The inner cuts lie on
// 64-byte lines (two members never write one line of staging); the shares
// are in order, do not overlap and cover the group. A share may be empty
// (a group of a few lines, more members than lines).
inline staging_range team_share(staging_range group, unsigned member, unsigned members) {
  constexpr std::size_t line = 64;
  const std::size_t bytes = group.end - group.begin;
  const auto cut = [&](unsigned m) {
    if (m == 0) return group.begin;
    if (m >= members) return group.end;
    const std::size_t even = group.begin + bytes / members * m + bytes % members * m / members;
    return std::min(group.end, (even + line - 1) / line * line);
  };
  return {cut(member), cut(member + 1)};
}

// f(pair, offset, bytes) for each piece of a pair's block within `r`: the
// pair's block bytes [offset, offset + bytes), in order.
template <class F>
void each_block_piece(staging_range r, std::size_t block_bytes, F&& f) {
  for (std::size_t at = r.begin; at < r.end;) {
    const std::size_t pair = at / block_bytes, offset = at - pair * block_bytes;
    const std::size_t bytes = std::min(block_bytes - offset, r.end - at);
    f(pair, offset, bytes);
    at += bytes;
  }
}

}  // namespace xfer::mem::detail
