// The registration cache's policy on the host step, whose registrations are
// emulated (a table, refusals as a driver's): the second copy registers, LRU
// eviction, the bound, forget, a refused registration falling back to the
// staged copy, and the stale checks.
#include <gtest/gtest.h>
#include <sys/mman.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <string>
#include <thread>
#include <vector>
#include <xfer/mem/os.hpp>
#include <xfer/mem/registration_cache.hpp>
#include <xfer/mem/staged/host_step.hpp>

#include "faulty_step.hpp"
#include "staged_conformance.hpp"

namespace xfer::test {
namespace {

using mem::registration_cache;
using mem::registration_error;

// Pages of their own (mmap), so no two test buffers share a page and
// madvise/munmap act on exactly the buffer.
class pages {
 public:
  explicit pages(std::size_t bytes) : bytes_(bytes) {
    p_ = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p_ == MAP_FAILED) throw std::runtime_error("mmap failed");
  }
  ~pages() { ::munmap(p_, bytes_); }
  pages(const pages&) = delete;
  pages& operator=(const pages&) = delete;
  unsigned char* data() const { return static_cast<unsigned char*>(p_); }
  std::size_t size() const { return bytes_; }
  void fill(unsigned seed) {
    for (std::size_t i = 0; i < bytes_; ++i) data()[i] = pattern_byte(i, seed);
  }

 private:
  void* p_;
  std::size_t bytes_;
};

constexpr std::size_t buffer_bytes = 16 * 4096;

struct fixture : ::testing::Test {
  mem::host_step step;
  device_buffer dev{step, buffer_bytes};
  std::size_t staging_taken(const mem::staged_copier& c) const {
    const auto s = c.staging_stats();
    return s.hits + s.misses;
  }
  // Copies `src` to the device and checks the device holds its bytes.
  void to_device(mem::staged_copier& c, const pages& src) {
    c.copy_to_device(dev.ref(), 0, src.data(), src.size());
    EXPECT_EQ(std::memcmp(step.host_view(dev.ref()), src.data(), src.size()), 0) << "the device holds other bytes";
  }
  mem::staged_copier_options with(registration_cache& cache) {
    auto o = with_tuning(small_chunks());
    o.registrations = &cache;
    return o;
  }
  // Fills `a` and copies it twice: the second copy registers it.
  void copy_twice(mem::staged_copier& c, pages& a, unsigned seed) {
    a.fill(seed);
    to_device(c, a);
    to_device(c, a);
  }
};

// The registration_error f() throws (a failure when it throws none).
template <class F>
registration_error error_of(F&& f) {
  try {
    f();
  } catch (const registration_error& e) {
    return e;
  }
  ADD_FAILURE() << "no registration_error was thrown";
  return registration_error(registration_error::reason::refused, 0, "none thrown");
}

using RegistrationCache = fixture;

TEST_F(RegistrationCache, TheSecondCopyRegistersAndLaterCopiesSkipStaging) {
  registration_cache cache(step, {.max_pinned_bytes = 4 * buffer_bytes});
  mem::staged_copier c(step, with(cache));
  pages a(buffer_bytes);
  a.fill(1);
  to_device(c, a);
  EXPECT_EQ(cache.stats().registered, 0u) << "a first copy never pins";
  EXPECT_GT(staging_taken(c), 0u) << "the first copy was staged";
  const std::size_t staged = staging_taken(c);
  a.fill(2);
  to_device(c, a);
  a.fill(3);
  to_device(c, a);
  const auto s = cache.stats();
  EXPECT_EQ(s.registered, 1u);
  EXPECT_EQ(s.hits, 2u);
  EXPECT_EQ(s.pinned_bytes, buffer_bytes);
  EXPECT_EQ(step.registrations(), 1u);
  EXPECT_EQ(step.registered(a.data(), a.size()), 1);
  EXPECT_EQ(staging_taken(c), staged) << "registered copies take no staging buffer";
  // The other direction from the same registration, into a fresh buffer
  // that is copied twice: the second registers it too.
  pages back(buffer_bytes);
  for (int i = 0; i < 2; ++i) {
    std::memset(back.data(), 0, back.size());
    c.copy_to_host(back.data(), dev.ref(), 0, back.size());
    EXPECT_EQ(std::memcmp(back.data(), a.data(), a.size()), 0);
  }
  EXPECT_EQ(cache.stats().registered, 2u);
}

TEST_F(RegistrationCache, EvictsTheLeastRecentlyCopied) {
  registration_cache cache(step, {.max_pinned_bytes = 3 * buffer_bytes});
  mem::staged_copier c(step, with(cache));
  pages a(buffer_bytes), b(buffer_bytes), d(buffer_bytes), e(buffer_bytes);
  for (pages* p : {&a, &b, &d}) copy_twice(c, *p, 5);
  EXPECT_EQ(cache.stats().registrations, 3u);
  to_device(c, a);  // a is now the most recent; b the least
  to_device(c, e);
  to_device(c, e);  // registers e: one must go, and it is b
  const auto s = cache.stats();
  EXPECT_EQ(s.evicted, 1u);
  EXPECT_EQ(s.pinned_bytes, 3 * buffer_bytes);
  EXPECT_EQ(step.registered(b.data(), b.size()), 0) << "b, the least recently copied, was unregistered";
  for (pages* p : {&a, &d, &e}) EXPECT_EQ(step.registered(p->data(), p->size()), 1);
}

TEST_F(RegistrationCache, ABufferOverTheBoundIsStaged) {
  registration_cache cache(step, {.max_pinned_bytes = buffer_bytes / 2});
  mem::staged_copier c(step, with(cache));
  pages a(buffer_bytes);
  copy_twice(c, a, 7);
  to_device(c, a);
  const auto s = cache.stats();
  EXPECT_EQ(s.registered, 0u);
  EXPECT_EQ(s.refused, 1u) << "refused once, then not tried again";
  EXPECT_NE(s.last_refusal.find("bound"), std::string::npos) << s.last_refusal;
  const auto e = error_of([&] { cache.pin(a.data(), a.size()); });
  EXPECT_EQ(e.why(), registration_error::reason::over_bound);
  EXPECT_EQ(e.bytes(), buffer_bytes);
  EXPECT_NE(std::string(e.what()).find(std::to_string(buffer_bytes)), std::string::npos) << e.what();
}

TEST_F(RegistrationCache, ForgetUnregistersAndTheNextCopyStartsOver) {
  registration_cache cache(step, {.max_pinned_bytes = 4 * buffer_bytes});
  mem::staged_copier c(step, with(cache));
  pages a(buffer_bytes);
  copy_twice(c, a, 8);
  EXPECT_EQ(cache.forget(a.data() + 100, 1), buffer_bytes) << "any byte of the buffer names it";
  EXPECT_EQ(step.registrations(), 0u);
  EXPECT_EQ(cache.stats().forgotten, 1u);
  EXPECT_EQ(cache.stats().pinned_bytes, 0u);
  to_device(c, a);
  EXPECT_EQ(cache.stats().registered, 1u) << "after forget() a copy is a first copy again";
  to_device(c, a);
  EXPECT_EQ(cache.stats().registered, 2u);
}

TEST_F(RegistrationCache, ARefusedRegistrationFallsBackToStaging) {
  step.set_registration_limit(buffer_bytes / 4);  // as ulimit -l would
  registration_cache cache(step, {.max_pinned_bytes = 4 * buffer_bytes});
  mem::staged_copier c(step, with(cache));
  pages a(buffer_bytes);
  for (unsigned i = 0; i < 3; ++i) {
    a.fill(10 + i);
    to_device(c, a);  // data checked: staged every time
  }
  const auto s = cache.stats();
  EXPECT_EQ(s.refused, 1u);
  EXPECT_NE(s.last_refusal.find("locked-memory limit"), std::string::npos) << s.last_refusal;
  EXPECT_EQ(s.pinned_bytes, 0u);
  EXPECT_EQ(step.registered_bytes(), 0u) << "nothing stays registered";
  const auto e = error_of([&] { cache.pin(a.data(), a.size()); });
  EXPECT_EQ(e.why(), registration_error::reason::refused);
  EXPECT_NE(e.cause().find("locked-memory limit"), std::string::npos) << e.cause();
  // The limit lifted: a forgotten range is tried again.
  step.set_registration_limit(static_cast<std::size_t>(-1));
  cache.forget(a.data(), a.size());
  to_device(c, a);
  to_device(c, a);
  EXPECT_EQ(cache.stats().registered, 1u);
}

TEST_F(RegistrationCache, PagesGivenBackAreFoundStale) {
  // MADV_DONTNEED: what free() may do to a large block; the pages under the
  // address are new (zero) ones, and the registration would hold the old.
  registration_cache cache(step, {.max_pinned_bytes = 4 * buffer_bytes});
  mem::staged_copier c(step, with(cache));
  pages a(buffer_bytes);
  copy_twice(c, a, 20);
  ASSERT_EQ(cache.stats().registered, 1u);
  ASSERT_EQ(::madvise(a.data(), a.size(), MADV_DONTNEED), 0);
  a.data()[0] = 42;  // the new memory written in part
  to_device(c, a);   // checks the device holds the new bytes
  const auto s = cache.stats();
  EXPECT_EQ(s.stale, 1u);
  EXPECT_EQ(s.pinned_bytes, 0u);
  EXPECT_EQ(step.registrations(), 0u) << "the stale registration was unregistered";
}

TEST_F(RegistrationCache, ARegistrationDroppedBehindTheCachesBackIsStale) {
  registration_cache cache(step, {.max_pinned_bytes = 4 * buffer_bytes});
  mem::staged_copier c(step, with(cache));
  pages a(buffer_bytes);
  copy_twice(c, a, 21);
  step.unregister_host(a.data());  // as a program calling cudaHostUnregister itself
  to_device(c, a);
  EXPECT_EQ(cache.stats().stale, 1u);
  EXPECT_EQ(cache.stats().hits, 1u) << "only the registering copy went from the registration";
}

TEST_F(RegistrationCache, AnUnmappedRangeIsStale) {
  // mincore failing with ENOMEM: the range is no longer mapped at all.
  registration_cache cache(step, {.max_pinned_bytes = 4 * buffer_bytes});
  mem::staged_copier c(step, with(cache));
  pages a(buffer_bytes);
  copy_twice(c, a, 22);
  mem::os_calls calls = mem::real_os();
  calls.mincore = [](void*, std::size_t, unsigned char*) {
    errno = ENOMEM;
    return -1;
  };
  {
    mem::scoped_os_override unmapped(calls);
    to_device(c, a);
  }
  EXPECT_EQ(cache.stats().stale, 1u);
  EXPECT_EQ(step.registrations(), 0u);
}

TEST_F(RegistrationCache, ExplicitOnlyRegistersWhatIsPinned) {
  registration_cache cache(step, {.max_pinned_bytes = 4 * buffer_bytes,
                                  .when = mem::registration_cache_options::policy::explicit_only});
  mem::staged_copier c(step, with(cache));
  pages a(buffer_bytes), b(buffer_bytes);
  a.fill(30);
  b.fill(31);
  for (int i = 0; i < 3; ++i) to_device(c, b);
  EXPECT_EQ(cache.stats().registered, 0u) << "copies alone register nothing";
  cache.pin(a.data(), a.size());
  cache.pin(a.data() + 5, 10);  // already covered: nothing new
  to_device(c, a);
  EXPECT_EQ(cache.stats().registered, 1u);
  EXPECT_EQ(cache.stats().hits, 1u);
}

TEST_F(RegistrationCache, TheCacheUnregistersEverythingWhenItGoes) {
  pages a(buffer_bytes), b(buffer_bytes);
  {
    registration_cache cache(step, {.max_pinned_bytes = 4 * buffer_bytes});
    cache.pin(a.data(), a.size());
    cache.pin(b.data(), b.size());
    EXPECT_EQ(step.registrations(), 2u);
  }
  EXPECT_EQ(step.registrations(), 0u);
  EXPECT_EQ(step.registered_bytes(), 0u);
}

TEST_F(RegistrationCache, ASubRangeOfARegistrationIsAHit) {
  registration_cache cache(step, {.max_pinned_bytes = 4 * buffer_bytes});
  mem::staged_copier c(step, with(cache));
  pages a(buffer_bytes);
  a.fill(40);
  cache.pin(a.data(), a.size());
  c.copy_to_device(dev.ref(), 0, a.data() + 4096 + 3, 5000);
  EXPECT_EQ(std::memcmp(step.host_view(dev.ref()), a.data() + 4096 + 3, 5000), 0);
  EXPECT_EQ(cache.stats().hits, 1u);
}

TEST_F(RegistrationCache, CopiersSharingACacheFromSeveralThreads) {
  // Two copiers of one step share a cache while a third thread forgets the
  // buffers over and over: every copy's bytes arrive, and nothing stays
  // registered once the cache goes (ThreadSanitizer runs this too).
  device_buffer dev2(step, buffer_bytes);
  {
    registration_cache cache(step, {.max_pinned_bytes = 2 * buffer_bytes});
    mem::staged_copier c1(step, with(cache)), c2(step, with(cache));
    pages a(buffer_bytes), b(buffer_bytes);
    std::atomic<bool> done{false};
    std::thread forgetter([&] {
      while (!done.load()) {
        cache.forget(a.data(), a.size());
        std::this_thread::yield();
      }
    });
    auto copies = [&](mem::staged_copier& c, pages& p, const device_buffer& d, unsigned seed) {
      for (unsigned i = 0; i < 20; ++i) {
        p.fill(seed + i);
        c.copy_to_device(d.ref(), 0, p.data(), p.size());
        EXPECT_EQ(std::memcmp(step.host_view(d.ref()), p.data(), p.size()), 0) << "copy " << i;
      }
    };
    std::thread t1([&] { copies(c1, a, dev, 60); });
    copies(c2, b, dev2, 90);
    t1.join();
    done.store(true);
    forgetter.join();
    EXPECT_GT(cache.stats().hits, 0u) << "b, never forgotten, went from its registration";
  }
  EXPECT_EQ(step.registrations(), 0u);
}

TEST(RegistrationCacheSetup, AStepThatCannotRegisterSaysSo) {
  faulty_step step;  // a device_step without registration (as OpenCL's)
  const auto e = error_of([&] { registration_cache cache(step); });
  EXPECT_EQ(e.why(), registration_error::reason::unsupported);
  EXPECT_NE(std::string(e.what()).find("cannot register"), std::string::npos) << e.what();
}

TEST(RegistrationCacheFaults, AFailedRegisteredCopyLeavesTheCopierUsable) {
  faulty_step step;
  step.allow_registration();
  device_buffer dev(step, buffer_bytes);
  pages a(buffer_bytes);
  {
    registration_cache cache(step, {.max_pinned_bytes = 4 * buffer_bytes});
    auto o = with_tuning(small_chunks());
    o.registrations = &cache;
    mem::staged_copier c(step, o);
    a.fill(50);
    c.copy_to_device(dev.ref(), 0, a.data(), a.size());  // staged
    step.fail(0, fault_at::wait);  // the next copy's DMA at device offset 0: the registered copy's one
    try {
      c.copy_to_device(dev.ref(), 0, a.data(), a.size());
      ADD_FAILURE() << "the injected failure was not reported";
    } catch (const mem::staged_error& e) {
      EXPECT_EQ(e.why(), mem::staged_error::reason::device);
      EXPECT_NE(e.cause().find("injected"), std::string::npos) << e.cause();
    }
    EXPECT_EQ(cache.stats().hits, 1u) << "it was the registered copy that failed";
    step.fail(SIZE_MAX, fault_at::wait);
    a.fill(51);
    c.copy_to_device(dev.ref(), 0, a.data(), a.size());  // the copier goes on, from the registration
    EXPECT_EQ(std::memcmp(step.host_view(dev.ref()), a.data(), a.size()), 0);
    EXPECT_EQ(cache.stats().hits, 2u);
    EXPECT_EQ(c.staging_stats().handed_out_bytes, 0u);
  }
  EXPECT_EQ(step.registered(a.data(), a.size()), 0) << "the cache's end unregistered it";
}

TEST(RegistrationCacheSetup, ACacheOfAnotherStepIsRefused) {
  mem::host_step one, other;
  registration_cache cache(other);
  auto o = with_tuning(small_chunks());
  o.registrations = &cache;
  EXPECT_THROW({ mem::staged_copier c(one, o); }, std::invalid_argument);
  EXPECT_GT(cache.max_pinned_bytes(), 0u) << "a default bound";
}

}  // namespace
}  // namespace xfer::test
