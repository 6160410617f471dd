// The copier's non-temporal copy: every length and alignment of the head,
// the 64-byte body and the tail, and nothing written outside the range.
#include <gtest/gtest.h>

#include <cstddef>
#include <vector>

#include "../../src/mem/staged/stream_copy.hpp"

namespace {

TEST(StreamCopy, EveryHeadBodyAndTail) {
  std::vector<unsigned char> src(1024), dst(1024);
  for (std::size_t i = 0; i < src.size(); ++i) src[i] = static_cast<unsigned char>(i * 7 + 1);
  for (std::size_t dst_off = 0; dst_off < 17; ++dst_off)
    for (std::size_t src_off = 0; src_off < 5; ++src_off)
      for (std::size_t n : {0, 1, 15, 16, 63, 64, 65, 79, 80, 127, 128, 200, 511, 777}) {
        std::fill(dst.begin(), dst.end(), 0xEE);
        xfer::mem::detail::stream_copy(dst.data() + dst_off, src.data() + src_off, n);
        for (std::size_t i = 0; i < dst.size(); ++i) {
          const bool inside = i >= dst_off && i < dst_off + n;
          const unsigned char want = inside ? src[src_off + i - dst_off] : 0xEE;
          ASSERT_EQ(dst[i], want) << "byte " << i << ", dst+" << dst_off << ", src+" << src_off << ", " << n << " bytes";
        }
      }
}

}  // namespace
