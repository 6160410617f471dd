#pragma once
// What every device step must get right through the staged copier, written
// once and run against each: the host step here (tests/staged), OpenCL on
// PoCL (tests/opencl), CUDA runtime and driver (tests/cuda, GPU only).
// Each case round-trips a pattern host -> device -> host and checks every
// byte, and that no byte around the destination moved.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>
#include <xfer/mem/staged/staged_copier.hpp>

namespace xfer::test {

// Small chunks, so that a few KiB cross many chunk boundaries; handoff 0 so
// every size goes through the pipeline (the handoff has its own tests).
inline mem::staged_tuning small_chunks(std::size_t chunk = 4096, unsigned depth = 6, unsigned threads = 3) {
  mem::staged_tuning t;
  t.chunk_bytes = chunk;
  t.ring_depth = depth;
  t.threads = threads;
  t.handoff_to_device_bytes = t.handoff_to_host_bytes = 0;
  return t;
}

inline mem::staged_copier_options with_tuning(const mem::staged_tuning& t) {
  mem::staged_copier_options o;
  o.tuning = t;
  return o;
}

inline unsigned char pattern_byte(std::size_t i, unsigned seed) {
  return static_cast<unsigned char>((i * 131 + seed * 7 + (i >> 8)) & 0xff);
}

// Device memory owned for a test.
class device_buffer {
 public:
  device_buffer(mem::device_step& s, std::size_t bytes) : step_(s), ref_(s.allocate(bytes)) {}
  ~device_buffer() { step_.deallocate(ref_); }
  device_buffer(const device_buffer&) = delete;
  device_buffer& operator=(const device_buffer&) = delete;
  mem::device_ref ref() const { return ref_; }

 private:
  mem::device_step& step_;
  mem::device_ref ref_;
};

// Copies `bytes` from host offset `host_off` to device offset `dev_off` and
// back into another host buffer at `host_off`; checks every byte and 64
// guard bytes either side of both destinations' ranges.
inline void round_trip(mem::staged_copier& c, std::size_t bytes, std::size_t host_off, std::size_t dev_off,
                       unsigned seed = 1) {
  constexpr std::size_t guard = 64;
  mem::device_step& step = c.step();
  device_buffer dev(step, dev_off + bytes + guard);
  // The device's guard bytes, known before the copy.
  std::vector<unsigned char> poison(dev_off + bytes + guard, 0xA5);
  c.copy_to_device(dev.ref(), 0, poison.data(), poison.size());

  std::vector<unsigned char> src(host_off + bytes + guard), back(host_off + bytes + guard, 0x5A);
  for (std::size_t i = 0; i < bytes; ++i) src[host_off + i] = pattern_byte(i, seed);
  c.copy_to_device(dev.ref(), dev_off, src.data() + host_off, bytes);
  c.copy_to_host(back.data() + host_off, dev.ref(), dev_off, bytes);
  for (std::size_t i = 0; i < bytes; ++i)
    if (back[host_off + i] != src[host_off + i]) {
      ADD_FAILURE() << "byte " << i << " of " << bytes << " (host offset " << host_off << ", device offset "
                    << dev_off << ") came back " << int(back[host_off + i]) << ", sent " << int(src[host_off + i]);
      return;
    }
  for (std::size_t i = 0; i < host_off; ++i) ASSERT_EQ(back[i], 0x5A) << "host byte before the range, " << bytes;
  for (std::size_t i = host_off + bytes; i < back.size(); ++i)
    ASSERT_EQ(back[i], 0x5A) << "host byte after the range, " << bytes;
  // The device bytes around the range: read the whole buffer back.
  std::vector<unsigned char> all(poison.size());
  c.copy_to_host(all.data(), dev.ref(), 0, all.size());
  for (std::size_t i = 0; i < dev_off; ++i) ASSERT_EQ(all[i], 0xA5) << "device byte before the range, " << bytes;
  for (std::size_t i = dev_off + bytes; i < all.size(); ++i)
    ASSERT_EQ(all[i], 0xA5) << "device byte after the range, " << bytes;
}

// Sizes that hit every chunk boundary case: k*chunk - 1, k*chunk, k*chunk + 1
// for k = 1.. `chunks`, and odd small ones.
inline std::vector<std::size_t> boundary_sizes(std::size_t chunk, unsigned chunks) {
  std::vector<std::size_t> v{1, 2, 3, 7, 63, 511, chunk / 2 + 1};
  for (unsigned k = 1; k <= chunks; ++k) {
    v.push_back(k * chunk - 1);
    v.push_back(k * chunk);
    v.push_back(k * chunk + 1);
  }
  return v;
}

inline void every_boundary(mem::device_step& step, unsigned chunks = 9) {
  mem::staged_copier c(step, with_tuning(small_chunks()));
  for (std::size_t bytes : boundary_sizes(c.tuning().chunk_bytes, chunks)) {
    SCOPED_TRACE(bytes);
    round_trip(c, bytes, 0, 0);
    if (::testing::Test::HasFailure()) return;
  }
  EXPECT_EQ(c.staging_stats().handed_out_bytes, 0u);
}

inline void unaligned_starts(mem::device_step& step) {
  mem::staged_copier c(step, with_tuning(small_chunks()));
  for (std::size_t host_off : {1, 3, 17, 4095})
    for (std::size_t dev_off : {0, 1, 5, 4097}) {
      SCOPED_TRACE(testing::Message() << "host offset " << host_off << ", device offset " << dev_off);
      round_trip(c, 5 * 4096 + 13, host_off, dev_off, static_cast<unsigned>(host_off + dev_off));
      if (::testing::Test::HasFailure()) return;
    }
}

// Several threads through one copier at once, blocking and async mixed,
// each on its own device buffer.
inline void concurrent_copies(mem::device_step& step, unsigned threads = 4, unsigned rounds = 6) {
  mem::staged_copier c(step, with_tuning(small_chunks()));
  std::vector<std::thread> ts;
  std::vector<int> failures(threads, 0);
  for (unsigned t = 0; t < threads; ++t)
    ts.emplace_back([&, t] {
      for (unsigned r = 0; r < rounds; ++r) {
        const std::size_t bytes = 4096 * (2 + t + r) + 97 * t + r;
        device_buffer dev(step, bytes);
        std::vector<unsigned char> src(bytes), back(bytes, 0);
        for (std::size_t i = 0; i < bytes; ++i) src[i] = pattern_byte(i, t * 100 + r);
        if (r % 2) {
          c.copy_to_device_async(dev.ref(), 0, src.data(), bytes).wait();
          c.copy_to_host_async(back.data(), dev.ref(), 0, bytes).wait();
        } else {
          c.copy_to_device(dev.ref(), 0, src.data(), bytes);
          c.copy_to_host(back.data(), dev.ref(), 0, bytes);
        }
        if (back != src) ++failures[t];
      }
    });
  for (auto& t : ts) t.join();
  for (unsigned t = 0; t < threads; ++t) EXPECT_EQ(failures[t], 0) << "thread " << t;
  EXPECT_EQ(c.staging_stats().handed_out_bytes, 0u);
}

// Several async copies in flight from one thread, waited for afterwards.
inline void async_in_flight(mem::device_step& step) {
  mem::staged_copier c(step, with_tuning(small_chunks()));
  constexpr unsigned n = 5;
  const std::size_t bytes = 7 * 4096 + 3;
  std::vector<std::unique_ptr<device_buffer>> devs;
  std::vector<std::vector<unsigned char>> srcs(n), backs(n, std::vector<unsigned char>(bytes));
  std::vector<mem::staged_completion> done;
  for (unsigned i = 0; i < n; ++i) {
    devs.push_back(std::make_unique<device_buffer>(step, bytes));
    srcs[i].resize(bytes);
    for (std::size_t j = 0; j < bytes; ++j) srcs[i][j] = pattern_byte(j, i + 40);
    done.push_back(c.copy_to_device_async(devs[i]->ref(), 0, srcs[i].data(), bytes));
  }
  for (auto& d : done) d.wait();
  done.clear();
  for (unsigned i = 0; i < n; ++i) done.push_back(c.copy_to_host_async(backs[i].data(), devs[i]->ref(), 0, bytes));
  for (unsigned i = 0; i < n; ++i) {
    done[i].wait();
    EXPECT_TRUE(done[i].ready());
    EXPECT_EQ(done[i].bytes(), bytes);
    EXPECT_EQ(backs[i], srcs[i]) << "copy " << i;
  }
}

}  // namespace xfer::test
