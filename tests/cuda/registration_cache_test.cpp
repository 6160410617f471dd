// The registration cache on a GPU (issue 37, item 5), through the runtime
// and the driver API: a reused pageable buffer's second and later copies go
// from its registration, with every byte checked; the driver's refusal and
// the stale checks on real registrations. Prints the first copy's time
// against the later ones' (a figure for the lead's run, not a test: tests
// assert no speed). Each skips, saying why, without a GPU.
#include <gtest/gtest.h>
#include <sys/mman.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>
#include <cuda_runtime.h>
#include <xfer/mem/cuda/staged_step.hpp>
#include <xfer/mem/registration_cache.hpp>

#include "../staged/staged_conformance.hpp"
#include "cuda_step_test.hpp"

namespace xfer::test {
namespace {

using mem::registration_cache;

constexpr std::size_t buffer_bytes = std::size_t{64} << 20;

class RegistrationCuda : public cuda_step_test {
 protected:
  // The default tuning (its handoff is far below 64 MiB: every copy here is
  // one the cache is asked about).
  mem::staged_copier_options with(registration_cache& cache) {
    auto o = with_tuning(mem::staged_tuning{});
    o.registrations = &cache;
    return o;
  }
  // Copies host -> device, reads the device back through the plain API and
  // checks every byte; returns the copy's time in ms.
  double to_device_checked(mem::staged_copier& c, mem::device_ref dev, const unsigned char* src, std::size_t n) {
    const auto t0 = std::chrono::steady_clock::now();
    c.copy_to_device(dev, 0, src, n);
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    std::vector<unsigned char> back(n);
    step_->plain_to_host(back.data(), dev, 0, n);
    EXPECT_EQ(std::memcmp(back.data(), src, n), 0) << "the device holds other bytes";
    return ms;
  }
};

void fill(unsigned char* p, std::size_t n, unsigned seed) {
  for (std::size_t i = 0; i < n; ++i) p[i] = pattern_byte(i, seed);
}

TEST_P(RegistrationCuda, LaterCopiesOfAReusedBufferGoFromItsRegistration) {
  registration_cache cache(*step_, {.max_pinned_bytes = 2 * buffer_bytes});
  mem::staged_copier c(*step_, with(cache));
  device_buffer dev(*step_, buffer_bytes);
  std::vector<unsigned char> host(buffer_bytes);  // pageable
  std::vector<double> ms;
  for (unsigned i = 0; i < 6; ++i) {
    fill(host.data(), host.size(), i);
    ms.push_back(to_device_checked(c, dev.ref(), host.data(), host.size()));
  }
  const auto s = cache.stats();
  EXPECT_EQ(s.registered, 1u);
  EXPECT_EQ(s.hits, 5u) << "the second copy and every later one";
  EXPECT_EQ(s.stale, 0u) << "a live registration was taken for stale";
  EXPECT_EQ(s.refused, 0u) << s.last_refusal;
  std::vector<double> later(ms.begin() + 2, ms.end());
  std::sort(later.begin(), later.end());
  std::printf("reuse h2d %zu MiB (%s): first %.2f ms (staged), second %.2f ms (registers), later median %.2f ms\n",
              buffer_bytes >> 20, std::string(step_->name()).c_str(), ms[0], ms[1], later[later.size() / 2]);
  // And back: the destination buffer registers on its second copy too.
  std::vector<unsigned char> back(buffer_bytes);
  for (unsigned i = 0; i < 3; ++i) {
    std::fill(back.begin(), back.end(), 0);
    c.copy_to_host(back.data(), dev.ref(), 0, back.size());
    EXPECT_EQ(back, host);
  }
  EXPECT_EQ(cache.stats().registered, 2u);
  cache.clear();
  EXPECT_EQ(cache.stats().pinned_bytes, 0u);
}

TEST_P(RegistrationCuda, TheDriversRefusalFallsBackToStaging) {
  // Memory already pinned by cudaHostAlloc: cudaHostRegister refuses it.
  unsigned char* pinned = nullptr;
  ASSERT_EQ(cudaHostAlloc(reinterpret_cast<void**>(&pinned), buffer_bytes, cudaHostAllocDefault), cudaSuccess);
  {
    registration_cache cache(*step_, {.max_pinned_bytes = 2 * buffer_bytes});
    mem::staged_copier c(*step_, with(cache));
    device_buffer dev(*step_, buffer_bytes);
    for (unsigned i = 0; i < 3; ++i) {
      fill(pinned, buffer_bytes, 10 + i);
      to_device_checked(c, dev.ref(), pinned, buffer_bytes);
    }
    const auto s = cache.stats();
    EXPECT_EQ(s.refused, 1u);
    EXPECT_FALSE(s.last_refusal.empty());
    std::printf("refusal recorded: %s\n", s.last_refusal.c_str());
    EXPECT_EQ(s.pinned_bytes, 0u);
  }
  EXPECT_EQ(cudaFreeHost(pinned), cudaSuccess);
}

TEST_P(RegistrationCuda, StaleRegistrationsAreDropped) {
  registration_cache cache(*step_, {.max_pinned_bytes = 2 * buffer_bytes});
  mem::staged_copier c(*step_, with(cache));
  device_buffer dev(*step_, buffer_bytes);
  void* p = ::mmap(nullptr, buffer_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(p, MAP_FAILED);
  auto* host = static_cast<unsigned char*>(p);
  fill(host, buffer_bytes, 20);
  to_device_checked(c, dev.ref(), host, buffer_bytes);
  to_device_checked(c, dev.ref(), host, buffer_bytes);
  ASSERT_EQ(cache.stats().registered, 1u);
  // The pages given back (as free() may) and half the new ones written:
  // the registration still holds the old pages, and must not be used.
  ASSERT_EQ(::madvise(host, buffer_bytes, MADV_DONTNEED), 0);
  fill(host, buffer_bytes / 2, 21);
  to_device_checked(c, dev.ref(), host, buffer_bytes);
  EXPECT_EQ(cache.stats().stale, 1u);
  // Registered again (two more copies), then unregistered behind the
  // cache's back: the driver's pointer attributes say so.
  to_device_checked(c, dev.ref(), host, buffer_bytes);
  ASSERT_EQ(cache.stats().registered, 2u);
  step_->unregister_host(host);
  to_device_checked(c, dev.ref(), host, buffer_bytes);
  EXPECT_EQ(cache.stats().stale, 2u);
  cache.clear();
  ::munmap(p, buffer_bytes);
}

XFER_CUDA_STEP_TESTS(RegistrationCuda);

}  // namespace
}  // namespace xfer::test
