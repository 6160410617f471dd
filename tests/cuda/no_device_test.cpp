// Runs everywhere (not labelled gpu): the parts of the CUDA backend that need
// no device, over a fake api (the backend's seam between it and CUDA): which
// host memory kinds it serves and with which properties, the vadd app's
// strategies and the points it refuses before touching the device, and the
// registering adaptor with injected register functions (including a refusal,
// which must leak nothing).
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <memory>
#include <set>
#include <string>
#include <xfer/core/app.hpp>
#include <xfer/core/errors.hpp>
#include <xfer/core/system_probe.hpp>
#include <xfer/cuda/registering_resource.hpp>
#include <xfer/mem/error.hpp>
#include <xfer/mem/host_resources.hpp>
#include <xfer/mem/os.hpp>

#include "cuda/cuda_backend.hpp"

using namespace xfer;
using namespace xfer::cuda;

namespace {

// A device with no CUDA behind it: anything that would reach CUDA throws.
struct fake_api final : api {
  bool can_map = true;
  bool managed = true;
  std::uint64_t total = std::uint64_t{64} << 20;
  int* current_calls;
  explicit fake_api(int* calls) : current_calls(calls) {}

  [[noreturn]] static void nope(const char* call) { throw api_error(call, 999, "fake: no device", ""); }
  std::string_view name() const noexcept override { return "runtime"; }
  int device_count() override { return 1; }
  device_attributes attributes(int) override {
    device_attributes a;
    a.name = "fake";
    a.total_memory = total;
    a.multiprocessors = 1;
    a.can_map_host_memory = can_map;
    a.managed_memory = managed;
    return a;
  }
  void make_current(int) override { ++*current_calls; }
  void memory_info(std::size_t& free, std::size_t& t) override { free = t = total; }
  int driver_version() override { return 13000; }
  int runtime_version() override { return 13000; }
  void* device_alloc(std::size_t) override { nope("device_alloc"); }
  void device_free(void*) noexcept override {}
  void* host_alloc(std::size_t, host_alloc_flags) override { nope("host_alloc"); }
  void host_free(void*) noexcept override {}
  void host_register(void*, std::size_t) override { nope("host_register"); }
  void host_unregister(void*) noexcept override {}
  void* mapped_device_pointer(void*) override { nope("mapped_device_pointer"); }
  void* managed_alloc(std::size_t) override { nope("managed_alloc"); }
  void managed_free(void*) noexcept override {}
  void copy(void*, const void*, std::size_t, copy_kind) override { nope("copy"); }
  void copy_async(void*, const void*, std::size_t, copy_kind, stream_t) override { nope("copy_async"); }
  void fill_device(void*, unsigned char, std::size_t) override { nope("fill_device"); }
  void synchronize() override { nope("synchronize"); }
  stream_t create_stream() override { nope("create_stream"); }
  void destroy_stream(stream_t) noexcept override {}
  void synchronize_stream(stream_t) override { nope("synchronize_stream"); }
  event_t create_event() override { nope("create_event"); }
  void destroy_event(event_t) noexcept override {}
  void record(event_t, stream_t) override { nope("record"); }
  void wait(stream_t, event_t) override { nope("wait"); }
  void synchronize_event(event_t) override { nope("synchronize_event"); }
  float elapsed_ms(event_t, event_t) override { nope("elapsed_ms"); }
};

struct fake_backend {
  int current_calls = 0;
  std::unique_ptr<cuda_backend> b;
  explicit fake_backend(bool can_map = true, mem::kind_options kinds = {}) {
    auto a = std::make_unique<fake_api>(&current_calls);
    a->can_map = can_map;
    b = std::make_unique<cuda_backend>("cuda-rt", std::move(a), kinds);
  }
};

}  // namespace

TEST(CudaHostMemory, ServesTheCudaKindsWithTheirProperties) {
  fake_backend f;
  for (const char* kind : {"registered", "pinned", "pinned-wc", "mapped", "managed"}) {
    auto r = f.b->host_memory(kind);
    ASSERT_NE(r, nullptr) << kind;
    EXPECT_EQ(r->kind(), kind);
    EXPECT_FALSE(r->describe().empty()) << kind;
    const auto p = r->props();
    EXPECT_TRUE(p.host_accessible) << kind;
    EXPECT_EQ(p.pinned, std::string(kind) != "managed") << kind;
    EXPECT_EQ(p.write_combined, std::string(kind) == "pinned-wc") << kind;
    EXPECT_EQ(p.device_accessible, std::string(kind) == "mapped" || std::string(kind) == "managed") << kind;
  }
  // The driver API allocates in the current context: each CUDA kind made one current.
  EXPECT_EQ(f.current_calls, 5);
}

TEST(CudaHostMemory, CoreKindsUseTheBackendsOptionsAndNeedNoContext) {
  fake_backend f(true, {.alignment = 65536, .unaligned_offset = 16});
  auto r = f.b->host_memory("aligned");
  EXPECT_EQ(r->kind(), "aligned");
  EXPECT_EQ(r->natural_alignment(), 65536u);
  EXPECT_FALSE(r->props().pinned);
  for (const char* kind : {"pageable", "pageable-unaligned", "huge"}) EXPECT_EQ(f.b->host_memory(kind)->kind(), kind);
  EXPECT_EQ(f.current_calls, 0);
}

TEST(CudaHostMemory, UnknownAndUnavailableKindsAreSkippedWithAReason) {
  fake_backend f(false);
  try {
    (void)f.b->host_memory("uncached");
    FAIL();
  } catch (const skip_point& e) {
    EXPECT_NE(std::string(e.what()).find("uncached"), std::string::npos) << e.what();
  }
  try {
    (void)f.b->host_memory("mapped");
    FAIL();
  } catch (const skip_point& e) {
    EXPECT_NE(std::string(e.what()).find("cannot map host memory"), std::string::npos) << e.what();
  }
}

TEST(CudaVaddNoDevice, StrategiesAreEveryHostKindWithAvailability) {
  fake_backend f(false);
  auto app = f.b->make_vadd_app(0);
  ASSERT_NE(app, nullptr);
  const auto s = app->strategies();
  const std::vector<std::string> expected{"pageable", "pageable-unaligned", "aligned", "huge",   "registered",
                                          "pinned",   "pinned-wc",          "mapped",  "managed"};
  ASSERT_EQ(s.size(), expected.size());
  for (std::size_t i = 0; i < s.size(); ++i) {
    EXPECT_EQ(s[i].name, expected[i]);
    EXPECT_FALSE(s[i].description.empty()) << s[i].name;
    EXPECT_EQ(s[i].available, s[i].name != "mapped") << s[i].name;
  }
  EXPECT_NE(s[4].description.find("cudaHostRegister"), std::string::npos) << s[4].description;
  EXPECT_NE(s[7].reason.find("cannot map"), std::string::npos) << s[7].reason;
  EXPECT_THROW(f.b->make_vadd_app(1), usage_error);
  EXPECT_THROW(f.b->make_vadd_app(-1), usage_error);
}

TEST(CudaVaddNoDevice, RefusesBeforeTouchingTheDevice) {
  fake_backend f(false);
  auto app = f.b->make_vadd_app(0);
  EXPECT_THROW(app->run("pinned", 0), skip_point);
  EXPECT_THROW(app->run("nonsense", 16), skip_point);
  EXPECT_THROW(app->run("mapped", 16), skip_point);  // the fake device cannot map
  EXPECT_THROW(app->run("pinned", SIZE_MAX / 2), skip_point);
  // 32 MiB vectors: three do not fit in the fake device's 64 MiB, four on the host usually do.
  const std::size_t n = std::size_t{8} << 20;
  try {
    app->run("aligned", n);
    FAIL() << "ran three 32 MiB vectors on a 64 MiB device";
  } catch (const skip_point& e) {
    const std::string what = e.what();
    const std::uint64_t host = available_memory_bytes();
    if (host == 0 || host > 4 * n * sizeof(std::uint32_t)) {
      EXPECT_NE(what.find("device 0 has 67108864 B in all"), std::string::npos) << what;
    }
    std::printf("%s\n", what.c_str());
  }
  EXPECT_EQ(f.current_calls, 0) << "a refused point made a context current";
}

// ---- the registering adaptor, with injected register functions -----------------------

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
  bool do_is_equal(const std::pmr::memory_resource& o) const noexcept override { return this == &o; }
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
