// The pack way's share of a group among its team (src/mem/blocks/team_split.hpp):
// every byte of every block of the group copied exactly once, and every member
// given an even part of the bytes, however few the blocks (a cut by whole
// blocks left most of the team idle with large blocks).
#include <gtest/gtest.h>

#include <cstddef>
#include <vector>

#include "../../src/mem/blocks/team_split.hpp"

namespace xfer::mem::detail {
namespace {

struct group_case {
  std::size_t first_pair, pairs, block_bytes;
  unsigned members;
};

// Runs every member's share of pairs [first, first + pairs) and counts the
// copies of each byte; returns each member's byte count.
std::vector<std::size_t> run_group(const group_case& g, std::vector<unsigned>& copies) {
  const staging_range group{g.first_pair * g.block_bytes, (g.first_pair + g.pairs) * g.block_bytes};
  copies.assign(g.pairs * g.block_bytes, 0);
  std::vector<std::size_t> per_member(g.members, 0);
  std::size_t last_end = group.begin;
  for (unsigned m = 0; m < g.members; ++m) {
    const staging_range r = team_share(group, m, g.members);
    EXPECT_EQ(r.begin, last_end) << "member " << m << "'s share does not follow the last one's";
    EXPECT_LE(r.begin, r.end);
    if (m > 0 && r.begin != group.begin && r.begin != group.end) {
      EXPECT_EQ(r.begin % 64, 0u) << "member " << m;
    }
    last_end = r.end;
    each_block_piece(r, g.block_bytes, [&](std::size_t pair, std::size_t offset, std::size_t bytes) {
      EXPECT_GE(pair, g.first_pair);
      EXPECT_LT(pair, g.first_pair + g.pairs);
      EXPECT_GT(bytes, 0u);
      EXPECT_LE(offset + bytes, g.block_bytes) << "a piece runs past its block";
      for (std::size_t b = 0; b < bytes; ++b) ++copies[(pair - g.first_pair) * g.block_bytes + offset + b];
      per_member[m] += bytes;
    });
  }
  EXPECT_EQ(last_end, group.end);
  return per_member;
}

TEST(PackTeamSplit, EveryByteOfEveryBlockOnceAndEachMemberAnEvenShare) {
  const std::vector<group_case> cases{
      {0, 2, std::size_t{2} << 20, 12},  // 2 MiB blocks: a group of 2 blocks, 12 members
      {6, 4, std::size_t{1} << 20, 8},   // a later group of 1 MiB blocks
      {3, 1, std::size_t{4} << 20, 12},  // a group of 1 block
      {0, 256, 16384, 12},               // many blocks a member
      {5, 7, 1000, 4},                   // blocks not a whole number of lines
      {9, 3, 4099, 12},                  // nor of the members' share
      {0, 1, 100, 12},                   // fewer lines than members: some shares empty
      {2, 5, 1, 8},                      // 1-byte blocks
      {0, 3, 777, 1},                    // a team of one
  };
  for (const group_case& g : cases) {
    SCOPED_TRACE(::testing::Message() << g.pairs << " pairs of " << g.block_bytes << " bytes from pair "
                                      << g.first_pair << ", " << g.members << " members");
    std::vector<unsigned> copies;
    const auto per_member = run_group(g, copies);
    for (std::size_t i = 0; i < copies.size(); ++i)
      ASSERT_EQ(copies[i], 1u) << "block " << i / g.block_bytes << " byte " << i % g.block_bytes;
    // Even: no member more than a line from the even share (a whole-block
    // cut gave two of twelve members a 2 MiB block each, the rest nothing).
    const std::size_t total = g.pairs * g.block_bytes, even = total / g.members;
    for (unsigned m = 0; m < g.members; ++m) {
      EXPECT_LE(per_member[m], even + 64 + 1) << "member " << m;
      if (total >= 64 * std::size_t{g.members} * 2) {
        EXPECT_GE(per_member[m] + 64, even) << "member " << m;
      }
    }
  }
}

}  // namespace
}  // namespace xfer::mem::detail
