// The kernels against the host's definitions: the device's pattern must be
// byte for byte fill_pattern's (verification of kernel-written data relies on
// it), and the unaligned paths must be as correct as the vector ones.
#include <cstring>
#include <vector>
#include <xfer/core/pattern.hpp>

#include "cuda/kernels.hpp"
#include "gpu.hpp"

using namespace xfer;
using namespace xfer::cuda;

namespace {

class CudaKernels : public ::testing::Test {
 protected:
  void SetUp() override {
    XFER_REQUIRE_GPU();
    a = &test::gpu().backend("cuda-rt")->cuda_api();
    a->make_current(0);
    s = std::make_unique<stream>(*a);
    sms = a->attributes(0).multiprocessors;
  }
  std::vector<unsigned char> read_back(const void* dev, std::size_t n) {
    a->synchronize_stream(s->get());
    std::vector<unsigned char> v(n);
    a->copy(v.data(), dev, n, copy_kind::d2h);
    return v;
  }
  api* a = nullptr;
  std::unique_ptr<stream> s;
  int sms = 1;
};

const std::size_t sizes[] = {1, 7, 8, 15, 16, 17, 4096 + 5, (1u << 20) + 3};

}  // namespace

TEST_F(CudaKernels, WritePatternMatchesTheHostPatternAlignedOrNot) {
  for (std::size_t n : sizes) {
    for (std::size_t offset : {0u, 1u, 8u}) {
      device_buffer dev(*a, n + 16);
      auto* dst = static_cast<unsigned char*>(dev.data()) + offset;
      kernels::write_pattern(s->get(), dst, n, 42, sms);
      const auto v = read_back(dst, n);
      EXPECT_FALSE(find_pattern_mismatch(v.data(), n, 42).has_value()) << n << " B at offset " << offset;
    }
  }
}

TEST_F(CudaKernels, CopyAndReadXorAreExactAlignedOrNot) {
  for (std::size_t n : sizes) {
    std::vector<unsigned char> src(n);
    fill_pattern(src.data(), n, 7);
    std::uint64_t expect = 0;
    for (std::size_t i = 0; i < n; ++i) expect ^= std::uint64_t(src[i]) << (8 * (i % 8));
    for (std::size_t offset : {0u, 3u}) {
      device_buffer in(*a, n + 16), out(*a, n + 16), sink(*a, 8);
      auto* s_in = static_cast<unsigned char*>(in.data()) + offset;
      auto* s_out = static_cast<unsigned char*>(out.data()) + 16 - offset;
      a->copy(s_in, src.data(), n, copy_kind::h2d);
      a->fill_device(sink.data(), 0, 8);
      kernels::copy(s->get(), s_out, s_in, n, sms);
      kernels::read_xor(s->get(), s_in, n, static_cast<std::uint64_t*>(sink.data()), sms);
      const auto v = read_back(s_out, n);
      EXPECT_EQ(std::memcmp(v.data(), src.data(), n), 0) << n << " B at offset " << offset;
      std::uint64_t got = 0;
      a->copy(&got, sink.data(), 8, copy_kind::d2h);
      EXPECT_EQ(got, expect) << n << " B at offset " << offset;
    }
  }
}

TEST_F(CudaKernels, PatternCheckFindsTheFirstWrongByteOrNone) {
  for (std::size_t n : sizes) {
    for (std::size_t offset : {0u, 5u}) {
      device_buffer dev(*a, n + 16), bad(*a, 8);
      auto* p = static_cast<unsigned char*>(dev.data()) + offset;
      const auto first_bad = [&] {
        a->fill_device(bad.data(), 0xFF, 8);
        kernels::find_pattern_mismatch(s->get(), p, n, 11, static_cast<std::uint64_t*>(bad.data()), sms);
        a->synchronize_stream(s->get());
        std::uint64_t at = 0;
        a->copy(&at, bad.data(), 8, copy_kind::d2h);
        return at;
      };
      kernels::write_pattern(s->get(), p, n, 11, sms);
      EXPECT_EQ(first_bad(), ~std::uint64_t{0}) << n << " B at offset " << offset;
      // Two wrong bytes: the earlier one is reported.
      for (std::size_t at : {n - 1, n / 2, std::size_t{0}}) {
        const unsigned char zero = 0;
        a->copy(p + at, &zero, 1, copy_kind::h2d);
        EXPECT_EQ(first_bad(), at) << n << " B at offset " << offset;
      }
    }
  }
}
