#include <gtest/gtest.h>

#include <atomic>
#include <vector>
#include <xfer/core/errors.hpp>
#include <xfer/core/pattern.hpp>
#include <xfer/cpu/cpu_ops.hpp>

namespace {

using namespace xfer::cpu;
using xfer::thread_team;

TEST(CpuOps, NamesRoundTripAndUnknownNamesAreUsageErrors) {
  for (op o : all_ops()) EXPECT_EQ(parse_op(to_string(o)), o);
  for (method m : all_methods()) EXPECT_EQ(parse_method(to_string(m)), m);
  EXPECT_THROW(parse_op("copy"), xfer::usage_error);
  EXPECT_THROW(parse_method("dma"), xfer::usage_error);
  EXPECT_THROW(parse_op(""), xfer::usage_error);
}

TEST(CpuOps, StreamingLoadsApplyOnlyToReads) {
  EXPECT_TRUE(applies(op::read, method::ntload));
  EXPECT_FALSE(applies(op::write, method::ntload));
  EXPECT_FALSE(applies(op::fill, method::ntload));
  for (op o : all_ops()) {
    EXPECT_TRUE(applies(o, method::memcpy));
    EXPECT_TRUE(applies(o, method::nontemporal));
  }
}

TEST(CpuOps, TrafficCountsReadAndWriteForCopies) {
  EXPECT_EQ(traffic_bytes(op::write, 100), 200u);
  EXPECT_EQ(traffic_bytes(op::read, 100), 200u);
  EXPECT_EQ(traffic_bytes(op::fill, 100), 100u);
}

TEST(CpuOps, SplitRangeCoversTheBufferOnceWithLineAlignedCuts) {
  alignas(64) static unsigned char line[64];
  for (std::size_t bytes : {1ul, 63ul, 64ul, 1000ul, 4096ul + 17, (1ul << 20) + 3})
    for (unsigned parts : {1u, 2u, 3u, 7u, 64u})
      for (std::size_t mis : {0ul, 1ul, 17ul, 63ul}) {
        SCOPED_TRACE(testing::Message() << bytes << " bytes, " << parts << " parts, dst+" << mis);
        const void* dst = line + mis;
        std::size_t expect_begin = 0;
        for (unsigned i = 0; i < parts; ++i) {
          const byte_range r = split_range(bytes, parts, i, dst);
          EXPECT_EQ(r.begin, expect_begin);
          EXPECT_LE(r.begin, r.end);
          if (r.end != 0 && r.end != bytes) {  // the ends are where the buffer is
            EXPECT_EQ((reinterpret_cast<std::uintptr_t>(dst) + r.end) % 64, 0u);
          }
          expect_begin = r.end;
        }
        EXPECT_EQ(expect_begin, bytes);
      }
}

TEST(CpuOps, ThreadTeamRunsEachIndexOnceAndIsReusable) {
  EXPECT_THROW(thread_team(0), std::invalid_argument);
  for (unsigned n : {1u, 2u, 5u}) {
    thread_team team(n);
    EXPECT_EQ(team.size(), n);
    for (int round = 0; round < 50; ++round) {
      std::vector<std::atomic<int>> hits(n);
      team.run([&](unsigned i) { hits[i].fetch_add(1); });
      for (unsigned i = 0; i < n; ++i) ASSERT_EQ(hits[i].load(), 1) << "index " << i << " round " << round;
    }
  }
}

// Every op and method with 1 and 3 threads on an odd size and odd starts: the data arrives.
TEST(CpuOps, EveryOpMethodAndThreadCountMovesTheData) {
  const std::size_t n = 300001;
  std::vector<std::byte> kind_storage(n + 64), regular_storage(n + 64);
  const op_buffers b{kind_storage.data() + 3, regular_storage.data() + 5, n};
  for (unsigned threads : {1u, 3u}) {
    thread_team team(threads);
    for (op o : all_ops())
      for (method m : all_methods()) {
        if (!applies(o, m)) continue;
        SCOPED_TRACE(testing::Message() << to_string(o) << " " << to_string(m) << " x" << threads);
        const std::uint64_t seed = 17 + threads;
        xfer::poison(b.kind, n);
        xfer::poison(b.regular, n);
        switch (o) {
          case op::write:
            xfer::fill_pattern(b.regular, n, seed);
            run_op(o, m, b, 0, team, 2);
            EXPECT_NO_THROW(xfer::check_pattern(b.kind, n, seed, "kind"));
            break;
          case op::read:
            xfer::fill_pattern(b.kind, n, seed);
            run_op(o, m, b, 0, team, 2);
            EXPECT_NO_THROW(xfer::check_pattern(b.regular, n, seed, "regular"));
            break;
          case op::fill:
            run_op(o, m, b, 0x77, team, 2);
            for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(static_cast<unsigned char>(b.kind[i]), 0x77) << i;
            break;
        }
        EXPECT_FALSE(implementation(o, m).empty());
      }
  }
}

}  // namespace
