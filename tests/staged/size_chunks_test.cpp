// The copier cutting each copy by the chunk chosen from its size
// (staged_tuning::size_chunks, issue 37): a copy fails where a chunk
// starts when that chunk's DMA is made to fail, and nowhere else, so the
// injected faults show where the copier cut it; the data survives a round
// trip either way. (The rule's arithmetic: tests/unit/staged_chunk_rule_test.cpp.)
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <vector>
#include <xfer/mem/staged/tuning.hpp>

#include "faulty_step.hpp"
#include "staged_conformance.hpp"

namespace xfer::test {
namespace {

constexpr std::size_t KiB = 1024, MiB = 1024 * KiB;

// True when a copy to the device fails, at `offset`, with its DMA there made to fail.
bool cut_at(faulty_step& step, mem::staged_copier& c, mem::device_ref dev, const std::vector<unsigned char>& src,
            std::size_t offset) {
  step.fail(offset, fault_at::enqueue);
  bool failed = false;
  try {
    c.copy_to_device(dev, 0, src.data(), src.size());
  } catch (const mem::staged_error& e) {
    EXPECT_EQ(e.at_offset(), offset) << e.what();
    failed = true;
  }
  step.fail(SIZE_MAX, fault_at::enqueue);
  return failed;
}

TEST(StagedSizeChunks, EachCopyIsCutByTheRuleAndArrivesIntact) {
  // 3 MiB + 13 with 1 MiB staging buffers: the rule's chunk is 512 KiB
  // whatever the LLC (3 MiB / 4 is under 1 MiB, and an LLC of 4 MiB or
  // more holds a ring of 4 of them in its half).
  const std::size_t bytes = 3 * MiB + 13;
  std::vector<unsigned char> src(bytes);
  for (std::size_t i = 0; i < bytes; ++i) src[i] = pattern_byte(i, 3);
  for (const bool rule : {false, true}) {
    SCOPED_TRACE(rule ? "rule on" : "rule off");
    faulty_step step;
    auto t = small_chunks(1 * MiB, 4, 3);
    t.size_chunks = rule;
    mem::staged_copier c(step, with_tuning(t));
    const std::size_t chunk = rule ? 512 * KiB : 1 * MiB, other = rule ? 1 * MiB : 512 * KiB;
    if (const std::size_t llc = mem::last_level_cache_bytes(); rule && llc != 0 && llc < 4 * MiB)
      GTEST_SKIP() << "an LLC under 4 MiB: the rule's chunk would be another";
    ASSERT_EQ(mem::staged_chunk_for(bytes, t, mem::last_level_cache_bytes()), chunk);
    round_trip(c, bytes, 0, 0, 5);

    device_buffer dev(step, bytes);
    auto starts = mem::staged_chunk_starts(bytes, chunk);
    starts.pop_back();  // the end
    for (const std::size_t s : starts) EXPECT_TRUE(cut_at(step, c, dev.ref(), src, s)) << "no chunk at " << s;
    // Where only the other cut starts a chunk, nothing fails.
    for (const std::size_t s : mem::staged_chunk_starts(bytes, other))
      if (s < bytes && !std::binary_search(starts.begin(), starts.end(), s)) {
        EXPECT_FALSE(cut_at(step, c, dev.ref(), src, s)) << "a chunk at " << s;
      }
    round_trip(c, bytes, 0, 0, 6);  // usable after the failures
  }
}

}  // namespace
}  // namespace xfer::test
