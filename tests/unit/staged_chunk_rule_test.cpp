// The staged copier's chunk chosen per copy size (staged_chunk_for, issue
// 37): the rule's arithmetic and its switch in the environment. The copier
// cutting copies by it is tested on the host step in
// tests/staged/size_chunks_test.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>
#include <xfer/mem/nontemporal.hpp>
#include <xfer/mem/staged/tuning.hpp>
#include <xfer/mem/settings.hpp>

#include "../support/scoped_inputs.hpp"

namespace xfer::test {
namespace {

namespace mem = xfer::mem;
constexpr std::size_t KiB = 1024, MiB = 1024 * KiB;

mem::staged_tuning sized(std::size_t chunk = 8 * MiB, unsigned ring = 4) {
  mem::staged_tuning t;
  t.chunk_bytes = chunk;
  t.ring_depth = ring;
  t.size_chunks = true;
  return t;
}

TEST(StagedChunkRule, OffMeansTheTuningsChunkForEverySize) {
  mem::staged_tuning t;
  EXPECT_TRUE(t.size_chunks) << "on by default since measured on the H100 and the H200 (issue 37)";
  t.chunk_bytes = 8 * MiB;
  t.size_chunks = false;
  for (const std::size_t bytes : {std::size_t{1}, 16 * MiB, std::size_t{1} << 30})
    EXPECT_EQ(mem::staged_chunk_for(bytes, t, 32 * MiB), 8 * MiB) << bytes;
}

TEST(StagedChunkRule, FourToEightChunksPerCopyBetweenTheBounds) {
  const auto t = sized();
  // No LLC known: the size alone decides.
  EXPECT_EQ(mem::staged_chunk_for(16 * MiB, t, 0), 4 * MiB) << "not 16 even 1 MiB chunks";
  EXPECT_EQ(mem::staged_chunk_for(8 * MiB, t, 0), 2 * MiB);
  EXPECT_EQ(mem::staged_chunk_for(64 * MiB, t, 0), 8 * MiB) << "never above chunk_bytes (a staging buffer)";
  EXPECT_EQ(mem::staged_chunk_for(std::size_t{1} << 30, t, 0), 8 * MiB);
  EXPECT_EQ(mem::staged_chunk_for(512 * KiB, t, 0), mem::min_size_chunk_bytes) << "never below 256 KiB";
  for (std::size_t bytes = 1 * MiB; bytes <= 32 * MiB; bytes += MiB + 4097) {
    const std::size_t c = mem::staged_chunk_for(bytes, t, 0);
    EXPECT_EQ(c & (c - 1), 0u) << "a power of two: " << c;
    const std::size_t chunks = (bytes + c - 1) / c;
    if (c > mem::min_size_chunk_bytes && c < t.chunk_bytes) {
      EXPECT_GE(chunks, mem::staged_chunks_per_copy) << bytes;
      EXPECT_LE(chunks, 2 * mem::staged_chunks_per_copy) << bytes;
      // Room for the ramps both ways: whole chunks in the middle, not the
      // even cut at chunk/8 of a copy too short for them.
      const auto starts = mem::staged_chunk_starts(bytes, c);
      std::size_t longest = 0;
      for (std::size_t i = 0; i + 1 < starts.size(); ++i) longest = std::max(longest, starts[i + 1] - starts[i]);
      EXPECT_EQ(longest, c) << bytes;
    }
  }
}

TEST(StagedChunkRule, TheRingFitsHalfTheLastLevelCache) {
  const auto t = sized(8 * MiB, 4);
  // 8 MiB of LLC: half is 4 MiB, a ring of 4 chunks of 1 MiB.
  EXPECT_EQ(mem::staged_chunk_for(64 * MiB, t, 8 * MiB), 1 * MiB);
  EXPECT_EQ(mem::staged_chunk_for(std::size_t{1} << 30, t, 8 * MiB), 1 * MiB);
  // A cache too small for a ring of 256 KiB chunks: the floor wins.
  EXPECT_EQ(mem::staged_chunk_for(64 * MiB, t, 1 * MiB), mem::min_size_chunk_bytes);
  // A deeper ring, smaller chunks.
  EXPECT_EQ(mem::staged_chunk_for(64 * MiB, sized(8 * MiB, 8), 8 * MiB), 512 * KiB);
  // A chunk_bytes below the floor is still the ceiling.
  EXPECT_EQ(mem::staged_chunk_for(64 * MiB, sized(64 * KiB, 4), 0), 64 * KiB);
}

// The staged fields the front door fixes from the environment (settings.hpp).
mem::staged_tuning tuning_from_environment() {
  return mem::apply_staged_overrides({}, mem::inputs_from_environment().staged);
}

// The cut the copier makes and the CUDA batch route copies (issue 51: the
// batch route once cut with the fixed chunk while the copier cut by size).
TEST(StagedChunkRule, ACopysCutFollowsItsSizeAndDirection) {
  mem::staged_tuning t;
  t.chunk_bytes = 8 * MiB;
  t.ring_depth = 4;
  const auto to_device = mem::staged_copy_starts(16 * MiB, t, mem::staged_direction::to_device, 0);
  EXPECT_EQ(to_device, mem::staged_chunk_starts(16 * MiB, 4 * MiB)) << "not 16 even 1 MiB chunks of the fixed cut";
  EXPECT_EQ(to_device[1], 512 * KiB) << "the ramp's first step";
  // A small cache: the ring to the host has twice the slots, so half the chunk.
  const auto d = mem::staged_copy_starts(16 * MiB, t, mem::staged_direction::to_device, 8 * MiB);
  const auto h = mem::staged_copy_starts(16 * MiB, t, mem::staged_direction::to_host, 8 * MiB);
  EXPECT_EQ(d, mem::staged_chunk_starts(16 * MiB, 1 * MiB));
  EXPECT_EQ(h, mem::staged_chunk_starts(16 * MiB, 512 * KiB));
  t.size_chunks = false;
  EXPECT_EQ(mem::staged_copy_starts(16 * MiB, t, mem::staged_direction::to_device, 0),
            mem::staged_chunk_starts(16 * MiB, 8 * MiB));
}

TEST(StagedChunkRule, SwitchedByItsVariableZeroOrOneOnly) {
  EXPECT_TRUE(tuning_from_environment().size_chunks);
  {
    scoped_env off("XFER_STAGED_SIZE_CHUNKS", "0");
    EXPECT_FALSE(tuning_from_environment().size_chunks);
  }
  scoped_env bad("XFER_STAGED_SIZE_CHUNKS", "2");
  try {
    (void)tuning_from_environment();
    FAIL() << "no error";
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()), "XFER_STAGED_SIZE_CHUNKS=2: expected 0 or 1");
  }
}

TEST(StagedChunkRule, LastLevelCacheIsReadOnceAndPlausible) {
  const std::size_t llc = mem::last_level_cache_bytes();
  EXPECT_EQ(llc, mem::last_level_cache_bytes());
  if (llc != 0) {
    EXPECT_GE(llc, 64 * KiB);
    EXPECT_LE(llc, std::size_t{4} << 30);
  }
}

TEST(StagedDemote, HostToDeviceCopiesUpToTheLastLevelCache) {
  mem::staged_tuning t;
  EXPECT_TRUE(t.demote_staging) << "on by default (issue 37, explore-b88f143)";
  EXPECT_TRUE(mem::staged_demotes(16 * MiB, t, 300 * MiB));
  EXPECT_TRUE(mem::staged_demotes(75 * MiB, t, 300 * MiB)) << "a quarter of the cache";
  EXPECT_FALSE(mem::staged_demotes(75 * MiB + 1, t, 300 * MiB)) << "above a quarter: measured to lose at 256 MiB";
  EXPECT_FALSE(mem::staged_demotes(300 * MiB, t, 300 * MiB));
  EXPECT_TRUE(mem::staged_demotes(mem::demote_limit_unknown_llc, t, 0)) << "an unknown cache: the limit measured";
  EXPECT_FALSE(mem::staged_demotes(mem::demote_limit_unknown_llc + 1, t, 0));
  t.demote_staging = false;
  EXPECT_FALSE(mem::staged_demotes(16 * MiB, t, 300 * MiB));
}

TEST(StagedDemote, SwitchedByItsVariableZeroOrOneOnly) {
  {
    scoped_env off("XFER_STAGED_DEMOTE", "0");
    EXPECT_FALSE(tuning_from_environment().demote_staging);
  }
  scoped_env bad("XFER_STAGED_DEMOTE", "yes");
  try {
    (void)tuning_from_environment();
    FAIL() << "no error";
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()), "XFER_STAGED_DEMOTE=yes: expected 0 or 1");
  }
}

TEST(StagedDemote, LeavesTheBytesAsTheyWere) {
  // Only a hint: whatever the CPU does with it, no byte changes, at any
  // alignment and length (0 included).
  std::vector<unsigned char> buf(3 * 4096 + 17);
  for (std::size_t i = 0; i < buf.size(); ++i) buf[i] = static_cast<unsigned char>(i * 7 + 3);
  const auto before = buf;
  for (const std::size_t off : {std::size_t{0}, std::size_t{1}, std::size_t{63}, std::size_t{4095}})
    for (const std::size_t len : {std::size_t{0}, std::size_t{1}, std::size_t{64}, std::size_t{5000}})
      mem::demote_to_shared_cache(buf.data() + off, len);
  EXPECT_EQ(buf, before);
}

TEST(StagedRingSlots, TwiceAsDeepToTheHost) {
  mem::staged_tuning t;
  t.ring_depth = 4;
  EXPECT_EQ(mem::staged_ring_slots(t, mem::staged_direction::to_device), 4u);
  EXPECT_EQ(mem::staged_ring_slots(t, mem::staged_direction::to_host), 8u) << "ring-48e3c4c: d2h gained at 16 and 64 MiB";
  t.ring_depth = 1;
  EXPECT_EQ(mem::staged_ring_slots(t, mem::staged_direction::to_host), 2u);
}

}  // namespace
}  // namespace xfer::test
