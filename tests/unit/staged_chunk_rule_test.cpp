// The staged copier's chunk chosen per copy size (staged_chunk_for, issue
// 37): the rule's arithmetic, its switch in the environment, and the copier
// cutting a copy by it (the DMAs the lane sees), data intact.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>
#include <xfer/mem/staged/host_step.hpp>
#include <xfer/mem/staged/staged_copier.hpp>
#include <xfer/mem/staged/tuning.hpp>

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
  t.chunk_bytes = 8 * MiB;
  EXPECT_FALSE(t.size_chunks) << "off by default until measured";
  for (const std::size_t bytes : {std::size_t{1}, 16 * MiB, std::size_t{1} << 30})
    EXPECT_EQ(mem::staged_chunk_for(bytes, t, 32 * MiB), 8 * MiB) << bytes;
}

TEST(StagedChunkRule, SixteenToThirtyTwoChunksPerCopyBetweenTheBounds) {
  const auto t = sized();
  // No LLC known: the size alone decides.
  EXPECT_EQ(mem::staged_chunk_for(16 * MiB, t, 0), 1 * MiB);
  EXPECT_EQ(mem::staged_chunk_for(64 * MiB, t, 0), 4 * MiB);
  EXPECT_EQ(mem::staged_chunk_for(256 * MiB, t, 0), 8 * MiB) << "never above chunk_bytes (a staging buffer)";
  EXPECT_EQ(mem::staged_chunk_for(std::size_t{1} << 30, t, 0), 8 * MiB);
  EXPECT_EQ(mem::staged_chunk_for(1 * MiB, t, 0), mem::min_size_chunk_bytes) << "never below 256 KiB";
  for (std::size_t bytes = 4 * MiB; bytes <= 128 * MiB; bytes += 3 * MiB + 4097) {
    const std::size_t c = mem::staged_chunk_for(bytes, t, 0);
    EXPECT_EQ(c & (c - 1), 0u) << "a power of two: " << c;
    const std::size_t chunks = (bytes + c - 1) / c;
    if (c > mem::min_size_chunk_bytes && c < t.chunk_bytes) {
      EXPECT_GE(chunks, mem::staged_chunks_per_copy) << bytes;
      EXPECT_LE(chunks, 2 * mem::staged_chunks_per_copy) << bytes;
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

struct scoped_env {
  const char* name;
  scoped_env(const char* n, const char* v) : name(n) { ::setenv(n, v, 1); }
  ~scoped_env() { ::unsetenv(name); }
};

TEST(StagedChunkRule, SwitchedByItsVariableZeroOrOneOnly) {
  EXPECT_FALSE(mem::tuning_from_environment().size_chunks);
  {
    scoped_env on("XFER_STAGED_SIZE_CHUNKS", "1");
    EXPECT_TRUE(mem::tuning_from_environment().size_chunks);
  }
  scoped_env bad("XFER_STAGED_SIZE_CHUNKS", "2");
  try {
    (void)mem::tuning_from_environment();
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

// The host step with every DMA's length written down.
class dma_log_step final : public mem::device_step {
 public:
  std::string_view name() const noexcept override { return "dma-log"; }
  std::string device_key() const override { return "dma-log"; }
  mem::host_resource& staging_memory() override { return host_.staging_memory(); }
  std::unique_ptr<mem::staging_lane> open_lane(unsigned slots) override {
    return std::make_unique<lane>(*this, host_.open_lane(slots));
  }
  void plain_to_device(mem::device_ref d, std::size_t o, const void* s, std::size_t n) override {
    host_.plain_to_device(d, o, s, n);
  }
  void plain_to_host(void* d, mem::device_ref s, std::size_t o, std::size_t n) override {
    host_.plain_to_host(d, s, o, n);
  }
  mem::device_ref allocate(std::size_t n) override { return host_.allocate(n); }
  void deallocate(mem::device_ref d) noexcept override { host_.deallocate(d); }
  const void* host_view(mem::device_ref d) const noexcept override { return host_.host_view(d); }

  std::vector<std::size_t> take() {
    std::lock_guard lock(mutex_);
    return std::exchange(lengths_, {});
  }

 private:
  class lane final : public mem::staging_lane {
   public:
    lane(dma_log_step& s, std::unique_ptr<mem::staging_lane> in) : step_(s), in_(std::move(in)) {}
    void to_device(const void* st, mem::device_ref d, std::size_t o, std::size_t n) override {
      step_.note(n);
      in_->to_device(st, d, o, n);
    }
    void to_host(void* st, mem::device_ref s, std::size_t o, std::size_t n) override {
      step_.note(n);
      in_->to_host(st, s, o, n);
    }
    void record(unsigned slot) override { in_->record(slot); }
    void wait(unsigned slot) override { in_->wait(slot); }
    void drain() noexcept override { in_->drain(); }

   private:
    dma_log_step& step_;
    std::unique_ptr<mem::staging_lane> in_;
  };
  void note(std::size_t n) {
    std::lock_guard lock(mutex_);
    lengths_.push_back(n);
  }
  mem::host_step host_;
  std::mutex mutex_;
  std::vector<std::size_t> lengths_;
};

TEST(StagedChunkRule, TheCopierCutsEachCopyByTheRule) {
  dma_log_step step;
  // 6 MiB + 13 with 1 MiB staging buffers: the rule's chunk is 256 KiB
  // whatever the LLC (6 MiB / 16 is under 512 KiB; any LLC of 2 MiB or more
  // allows a ring of 4 such chunks).
  const std::size_t bytes = 6 * MiB + 13;
  std::vector<unsigned char> src(bytes), back(bytes, 0);
  for (std::size_t i = 0; i < bytes; ++i) src[i] = static_cast<unsigned char>(i * 7 + (i >> 11));
  const mem::device_ref dev = step.allocate(bytes);
  for (const bool rule : {false, true}) {
    mem::staged_tuning t = sized(1 * MiB, 4);
    t.threads = 3;
    t.size_chunks = rule;
    t.handoff_to_device_bytes = t.handoff_to_host_bytes = 0;
    mem::staged_copier_options o;
    o.tuning = t;
    mem::staged_copier c(step, o);
    const std::size_t chunk = rule ? 256 * KiB : 1 * MiB;
    ASSERT_EQ(mem::staged_chunk_for(bytes, t, mem::last_level_cache_bytes()), chunk);
    const auto starts = mem::staged_chunk_starts(bytes, chunk);
    std::vector<std::size_t> want;
    for (std::size_t i = 0; i + 1 < starts.size(); ++i) want.push_back(starts[i + 1] - starts[i]);
    // The DMAs as a multiset: whichever thread finishes a chunk queues it,
    // so neighbours may swap.
    std::sort(want.begin(), want.end());
    auto dmas = [&] {
      auto got = step.take();
      std::sort(got.begin(), got.end());
      return got;
    };
    (void)step.take();
    c.copy_to_device(dev, 0, src.data(), bytes);
    EXPECT_EQ(dmas(), want) << (rule ? "rule on" : "rule off") << ": the DMAs of the copy to the device";
    std::fill(back.begin(), back.end(), 0);
    c.copy_to_host(back.data(), dev, 0, bytes);
    EXPECT_EQ(dmas(), want) << (rule ? "rule on" : "rule off") << ": the copy to the host is cut the same way";
    EXPECT_TRUE(back == src) << (rule ? "rule on" : "rule off") << ": the data did not survive the round trip";
  }
  step.deallocate(dev);
}

}  // namespace
}  // namespace xfer::test
