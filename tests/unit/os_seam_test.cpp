#include <cerrno>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <xfer/mem/error.hpp>
#include <xfer/mem/host_resources.hpp>
#include <xfer/mem/os.hpp>

using namespace xfer::mem;

namespace {

os_calls failing() {
  os_calls c = real_os();
  c.malloc = [](std::size_t) -> void* {
    errno = ENOMEM;
    return nullptr;
  };
  c.posix_memalign = [](void**, std::size_t, std::size_t) { return ENOMEM; };
  c.mmap = [](void*, std::size_t, int, int, int, off_t) -> void* {
    errno = EAGAIN;
    return MAP_FAILED;
  };
  return c;
}

}  // namespace

TEST(OsSeam, InjectedFailuresBecomeAllocationErrorsWithSizeAndCause) {
  const os_calls calls = failing();
  scoped_os_override guard(calls);
  pageable_resource pageable;
  unaligned_resource unaligned;
  aligned_resource aligned;
  huge_page_resource huge;
  for (host_resource* r : std::initializer_list<host_resource*>{&pageable, &unaligned, &aligned, &huge}) {
    try {
      (void)r->allocate(12345, 8);
      FAIL() << r->kind();
    } catch (const allocation_error& e) {
      EXPECT_EQ(e.bytes(), 12345u);
      const std::string what = e.what();
      EXPECT_NE(what.find(std::string(r->kind())), std::string::npos) << what;
      EXPECT_NE(what.find("12345"), std::string::npos) << what;
      EXPECT_FALSE(e.cause().empty());
    }
  }
}

TEST(OsSeam, OverrideIsScoped) {
  {
    const os_calls calls = failing();
    scoped_os_override guard(calls);
    EXPECT_NE(&os(), &real_os());
  }
  EXPECT_EQ(&os(), &real_os());
  pageable_resource r;
  void* p = r.allocate(16);
  r.deallocate(p, 16);
}
