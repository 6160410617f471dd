// Runs everywhere (not labelled gpu): the registering adaptor with injected
// register functions, so no device is needed: whole pages registered and
// unregistered, and a refusal, which must leak nothing.
#include <gtest/gtest.h>

#include <cstdint>
#include <memory_resource>
#include <set>
#include <string>
#include <vector>
#include <xfer/mem/cuda/registering_resource.hpp>
#include <xfer/mem/error.hpp>
#include <xfer/mem/host_resources.hpp>
#include <xfer/mem/os.hpp>

using namespace xfer;
using namespace xfer::cuda;

namespace {

struct reg_log {
  static inline std::set<void*> registered;
  static inline std::size_t last_bytes = 0;
  static inline bool refuse = false;
  static std::string reg(void* p, std::size_t bytes) {
    if (refuse) return "fakeErrorRefused: not today";
    last_bytes = bytes;
    registered.insert(p);
    return {};
  }
  static void unreg(void* p) noexcept { registered.erase(p); }
};

// Counts what is live upstream.
struct counting final : mem::host_resource {
  mem::host_resource& inner;
  int live = 0;
  explicit counting(mem::host_resource& r) : inner(r) {}
  std::string_view kind() const noexcept override { return inner.kind(); }
  mem::properties props() const noexcept override { return inner.props(); }
  std::size_t max_alignment() const noexcept override { return inner.max_alignment(); }
  std::size_t natural_alignment() const noexcept override { return inner.natural_alignment(); }
  std::string describe() const override { return inner.describe(); }
  void* do_allocate(std::size_t b, std::size_t a) override {
    void* p = inner.allocate(b, a);
    ++live;
    return p;
  }
  void do_deallocate(void* p, std::size_t b, std::size_t a) noexcept override {
    --live;
    inner.deallocate(p, b, a);
  }
};

const register_functions fake_fns{&reg_log::reg, &reg_log::unreg, "fakeRegister"};

}  // namespace

TEST(RegisteringResource, RegistersWholePagesAndUnregistersOnDeallocate) {
  mem::aligned_resource aligned(64);
  counting up(aligned);
  registering_resource r(up, fake_fns);
  reg_log::refuse = false;
  EXPECT_EQ(r.kind(), "registered");
  EXPECT_TRUE(r.props().pinned);
  EXPECT_FALSE(up.props().pinned);
  EXPECT_EQ(r.natural_alignment(), mem::page_size());
  EXPECT_NE(r.describe().find("fakeRegister"), std::string::npos);
  void* p = r.allocate(100, 16);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(p) % mem::page_size(), 0u);
  EXPECT_EQ(reg_log::last_bytes, mem::page_size());
  EXPECT_EQ(reg_log::registered.count(p), 1u);
  EXPECT_EQ(up.live, 1);
  r.deallocate(p, 100, 16);
  EXPECT_TRUE(reg_log::registered.empty());
  EXPECT_EQ(up.live, 0);
  // And through std::pmr, as a user would.
  {
    std::pmr::vector<int> v(&r);
    v.resize(5000);
    EXPECT_EQ(reg_log::registered.size(), 1u);
  }
  EXPECT_TRUE(reg_log::registered.empty());
  EXPECT_EQ(up.live, 0);
}

TEST(RegisteringResource, ARefusedRegistrationFreesTheBlockAndSaysWhy) {
  mem::aligned_resource aligned(4096);
  counting up(aligned);
  registering_resource r(up, fake_fns);
  reg_log::refuse = true;
  try {
    (void)r.allocate(12345, 64);
    FAIL() << "allocated although registration was refused";
  } catch (const mem::allocation_error& e) {
    EXPECT_EQ(e.bytes(), 12345u);
    EXPECT_NE(e.cause().find("fakeErrorRefused"), std::string::npos) << e.cause();
  }
  reg_log::refuse = false;
  EXPECT_EQ(up.live, 0) << "the refused block leaked";
  EXPECT_TRUE(reg_log::registered.empty());
}

TEST(RegisteringResource, UpstreamFailureAndBadAlignmentThrowAllocationError) {
  mem::aligned_resource aligned(4096);
  registering_resource r(aligned, fake_fns);
  EXPECT_THROW((void)r.allocate(64, 3), mem::allocation_error);
  EXPECT_THROW((void)r.allocate(SIZE_MAX / 2, 4096), mem::allocation_error);
  EXPECT_TRUE(reg_log::registered.empty());
  registering_resource none(aligned, register_functions{nullptr, nullptr, nullptr});
  EXPECT_THROW((void)none.allocate(64, 64), mem::allocation_error);
}
