// Runs everywhere (not labelled gpu): the parts of the CUDA backend that need
// no device, over a fake api (the backend's seam between it and CUDA): which
// host memory kinds it serves and with which properties, the vadd app's
// strategies and the points it refuses before touching the device, and the
// pinned-fast kind's registration (the registering adaptor alone is
// registering_adaptor_test.cpp's).
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>
#include <map>
#include <cstring>
#include <cstdlib>
#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>
#include <xfer/app/vadd.hpp>
#include <xfer/core/errors.hpp>
#include <xfer/core/system_probe.hpp>
#include <xfer/mem/cuda/host_kinds.hpp>
#include <xfer/mem/error.hpp>
#include <xfer/mem/host_resources.hpp>

#include "cuda/cuda_backend.hpp"
#include "cuda/resources.hpp"
#include "cuda/vadd_app.hpp"

using namespace xfer;
using namespace xfer::cuda;

namespace {

// A device with no CUDA behind it: anything that would reach CUDA throws.
struct fake_api final : api {
  bool can_map = true;
  bool managed = true;
  std::uint64_t total = std::uint64_t{64} << 20;
  // host_alloc hands out real memory this many bytes into a page (as CUDA 13
  // did on the H100); negative: it refuses, like a device-less driver.
  long host_offset = -1;
  std::map<void*, void*> host_blocks;  // what host_alloc returned -> the page it lies in
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
  int driver = 13000;
  int driver_version() override { return driver; }
  int runtime_version() override { return 13000; }
  void* device_alloc(std::size_t) override { nope("device_alloc"); }
  void device_free(void*) noexcept override {}
  void* host_alloc(std::size_t bytes, host_alloc_flags) override {
    if (host_offset < 0) nope("host_alloc");
    const std::size_t page = 4096;
    void* base = std::aligned_alloc(page, (bytes + host_offset + page - 1) / page * page);
    void* p = static_cast<char*>(base) + host_offset;
    host_blocks[p] = base;
    return p;
  }
  void host_free(void* p) noexcept override {
    const auto it = host_blocks.find(p);
    if (it == host_blocks.end()) std::abort();  // freeing what the API never gave out
    std::free(it->second);
    host_blocks.erase(it);
  }
  // Registration refused (a device-less driver) unless a test accepts it;
  // accepted ranges are kept, so a test sees what was registered, and how often.
  bool accept_register = false;
  std::map<void*, std::size_t> registered;
  void host_register(void* p, std::size_t bytes) override {
    if (!accept_register) nope("host_register");
    registered[p] = bytes;
  }
  void host_unregister(void* p) noexcept override { registered.erase(p); }
  // Device addresses differ from host ones here, so an offset lost on the way shows.
  static constexpr std::uintptr_t device_shift = std::uintptr_t{1} << 40;
  void* mapped_device_pointer(void* p) override {
    if (!host_blocks.count(p)) nope("mapped_device_pointer");
    return reinterpret_cast<void*>(reinterpret_cast<std::uintptr_t>(p) + device_shift);
  }
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
  explicit fake_backend(bool can_map = true, mem::kind_options kinds = {}, int driver = 13000) {
    auto a = std::make_unique<fake_api>(&current_calls);
    a->can_map = can_map;
    a->driver = driver;
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

// The zero-copy routes take what the device can address: with unified
// addressing every pinned kind and managed memory, without it only mapped
// (and managed); pageable memory never.
TEST(CudaHostMemory, DeviceAccessFollowsTheDevicesAddressing) {
  fake_backend f;
  device_attributes unified;
  unified.unified_addressing = unified.can_map_host_memory = unified.managed_memory = true;
  device_attributes separate = unified;
  separate.unified_addressing = false;
  for (const char* kind : {"registered", "pinned", "pinned-wc", "mapped", "managed"}) {
    auto r = f.b->host_memory(kind);
    EXPECT_EQ(device_access_gap(*r, unified), "") << kind;
    const bool reachable_without_uva = std::string(kind) == "mapped" || std::string(kind) == "managed";
    EXPECT_EQ(device_access_gap(*r, separate).empty(), reachable_without_uva) << kind;
  }
  for (const char* kind : {"pageable", "pageable-unaligned", "aligned", "huge"}) {
    const std::string gap = device_access_gap(*f.b->host_memory(kind), unified);
    EXPECT_NE(gap.find("cannot address"), std::string::npos) << kind << ": " << gap;
  }
  device_attributes no_map = unified;
  no_map.can_map_host_memory = false;
  EXPECT_NE(device_access_gap(*f.b->host_memory("mapped"), no_map), "");
}

// A GPU the build has no code for: the line names the device, what the
// binary covers, and the option that covers it.
TEST(CudaBackendNoDevice, AnUncoveredDeviceIsNamedWithTheFix) {
  device_attributes a;
  a.name = "NVIDIA Future";
  a.cc_major = 13;
  a.cc_minor = 1;
  const std::string why = uncovered_device_reason(0, a, "75-real 80-real 90-real 100-real 110-real 120");
  EXPECT_NE(why.find("device 0 (NVIDIA Future, compute capability 13.1)"), std::string::npos) << why;
  EXPECT_NE(why.find("built for 75-real 80-real 90-real 100-real 110-real 120"), std::string::npos) << why;
  EXPECT_NE(why.find("-DCMAKE_CUDA_ARCHITECTURES=131"), std::string::npos) << why;
}

// The API may hand out pinned blocks anywhere in a page (CUDA 13 did, at
// +0x200): the pinned kinds still deliver page-aligned blocks of the full
// size, give the device address of any byte inside, and return exactly what
// the API gave when freed, in any order.
TEST(CudaHostMemory, PinnedKindsArePageAlignedWhateverTheApiReturns) {
  int calls = 0;
  fake_api a(&calls);
  a.host_offset = 0x200;
  for (auto make : {+[](api& x) -> std::unique_ptr<pinned_host_resource> { return std::make_unique<pinned_resource>(x); },
                    +[](api& x) -> std::unique_ptr<pinned_host_resource> { return std::make_unique<pinned_wc_resource>(x); },
                    +[](api& x) -> std::unique_ptr<pinned_host_resource> { return std::make_unique<mapped_resource>(x); }}) {
    auto r = make(a);
    std::vector<std::pair<void*, std::size_t>> blocks;
    for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{4096}, std::size_t{4097}, std::size_t{3} << 20}) {
      void* p = r->allocate(n, 4096);
      EXPECT_EQ(reinterpret_cast<std::uintptr_t>(p) % 4096, 0u) << r->kind() << " " << n << " B at " << p;
      std::memset(p, 0xAB, n);  // the whole block is there (ASan would see an overrun)
      auto* inside = static_cast<char*>(p) + n / 2;
      const auto base = std::find_if(a.host_blocks.begin(), a.host_blocks.end(), [&](auto& b) {
        return b.first <= static_cast<void*>(inside) && static_cast<void*>(inside) < static_cast<char*>(b.first) + n + 8192;
      });
      ASSERT_NE(base, a.host_blocks.end());
      EXPECT_EQ(r->device_pointer(inside),
                static_cast<char*>(base->first) + fake_api::device_shift + (inside - static_cast<char*>(base->first)));
      blocks.emplace_back(p, n);
    }
    EXPECT_EQ(r->live_blocks(), blocks.size());
    EXPECT_THROW((void)r->device_pointer(&calls), api_error);  // not one of its blocks
    int foreign = 0;
    r->deallocate(&foreign, sizeof foreign, 1);  // not its own: ignored, never handed to the API
    for (std::size_t i : {3, 0, 4, 1, 2}) r->deallocate(blocks[i].first, blocks[i].second, 4096);
    EXPECT_EQ(r->live_blocks(), 0u);
    EXPECT_TRUE(a.host_blocks.empty()) << a.host_blocks.size() << " blocks never returned to the API";
  }
}

// A refused allocation says which kind, how many bytes, and the API's error.
TEST(CudaHostMemory, ARefusedPinnedAllocationNamesTheBytesAndTheCause) {
  int calls = 0;
  fake_api a(&calls);
  pinned_resource r(a);
  try {
    (void)r.allocate(12345, 1);
    FAIL();
  } catch (const mem::allocation_error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("12345"), std::string::npos) << what;
    EXPECT_NE(what.find("fake: no device"), std::string::npos) << what;
    EXPECT_NE(what.find("pinned"), std::string::npos) << what;
  }
  EXPECT_EQ(r.live_blocks(), 0u);
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
  auto app = make_vadd_app(*f.b, 0);
  ASSERT_NE(app, nullptr);
  const auto s = app->strategies();
  const std::vector<std::string> expected{"pageable", "pageable-unaligned", "aligned", "huge",   "registered",
                                          "pinned",   "pinned-wc",          "mapped",  "managed", "staged"};
  ASSERT_EQ(s.size(), expected.size());
  for (std::size_t i = 0; i < s.size(); ++i) {
    EXPECT_EQ(s[i].name, expected[i]);
    EXPECT_FALSE(s[i].description.empty()) << s[i].name;
    EXPECT_EQ(s[i].available, s[i].name != "mapped") << s[i].name;
  }
  EXPECT_NE(s[4].description.find("cudaHostRegister"), std::string::npos) << s[4].description;
  EXPECT_NE(s[7].reason.find("cannot map"), std::string::npos) << s[7].reason;
  EXPECT_THROW(make_vadd_app(*f.b, 1), usage_error);
  EXPECT_THROW(make_vadd_app(*f.b, -1), usage_error);
}

TEST(CudaVaddNoDevice, RefusesBeforeTouchingTheDevice) {
  fake_backend f(false);
  auto app = make_vadd_app(*f.b, 0);
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

// pinned-fast: the pages are faulted in by several threads, then the whole
// block is registered once (a copy may span any part of it).
TEST(CudaFastPinned, RegistersTheWholeBlockOnceAndUnregistersIt) {
  int calls = 0;
  fake_api a(&calls);
  a.accept_register = true;
  fast_pinned_resource r(a, 3);
  EXPECT_EQ(r.kind(), "pinned-fast");
  EXPECT_TRUE(r.props().pinned);
  EXPECT_NE(r.describe().find("3 threads"), std::string::npos) << r.describe();
  const std::size_t n = (std::size_t{48} << 20) + 5;  // three threads' shares and a ragged end
  auto* p = static_cast<unsigned char*>(r.allocate(n, 4096));
  ASSERT_EQ(a.registered.size(), 1u);
  EXPECT_EQ(a.registered.begin()->first, p);
  EXPECT_GE(a.registered.begin()->second, n);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(p) % 4096, 0u);
  EXPECT_EQ(p[0], 0);
  EXPECT_EQ(p[n - 1], 0);  // every page mapped, the last one too
  std::memset(p, 0x3C, n);
  r.deallocate(p, n, 4096);
  EXPECT_TRUE(a.registered.empty());
}

TEST(CudaFastPinned, ARefusedRegistrationIsATypedErrorWithTheSize) {
  int calls = 0;
  fake_api a(&calls);  // refuses registration, as a driver without a device does
  fast_pinned_resource r(a);
  try {
    (void)r.allocate(std::size_t{8} << 20, 4096);
    FAIL() << "registration was refused, yet the allocation succeeded";
  } catch (const mem::allocation_error& e) {
    EXPECT_EQ(e.bytes(), std::size_t{8} << 20);
    EXPECT_NE(std::string(e.what()).find("host_register"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(a.registered.empty());
}

// libxfer's public factory: plain kinds need no CUDA, an unknown name is
// nullptr without starting CUDA, and a CUDA kind on a machine whose CUDA
// cannot start is a std::runtime_error saying why.
TEST(CudaHostKindFactory, NamesTheCudaKindsAndMakesThemOrSaysWhyNot) {
  const auto& names = cuda_host_kind_names();
  for (const char* k : {"registered", "pinned", "pinned-wc", "mapped", "managed", "pinned-fast"})
    EXPECT_NE(std::find(names.begin(), names.end(), k), names.end()) << k;
  for (const auto& core : mem::host_kind_names())
    EXPECT_EQ(std::find(names.begin(), names.end(), core), names.end()) << core << " needs no CUDA";
  EXPECT_EQ(make_cuda_host_kind("no-such-kind"), nullptr);
  auto aligned = make_cuda_host_kind("aligned");
  ASSERT_NE(aligned, nullptr);
  EXPECT_EQ(aligned->kind(), "aligned");
  for (auto api : {allocating_api::runtime, allocating_api::driver}) {
    std::unique_ptr<mem::host_resource> pinned;
    try {
      pinned = make_cuda_host_kind("pinned", api);
    } catch (const std::runtime_error& e) {
      EXPECT_FALSE(std::string(e.what()).empty());
      continue;  // no CUDA here: said, not crashed
    }
    ASSERT_NE(pinned, nullptr);  // CUDA is here: the block is real and pinned
    EXPECT_TRUE(pinned->props().pinned);
    void* p = pinned->allocate(1 << 20, 4096);
    std::memset(p, 1, 1 << 20);
    pinned->deallocate(p, 1 << 20, 4096);
  }
}

// Route batch-any-order decides before touching the device: pageable kinds
// only, and only where the driver has cudaMemcpyBatchAsync (CUDA 12.8).
TEST(CudaBatchRoute, SkipsWithTheReasonBeforeTouchingTheDevice) {
  auto skip_reason = [](fake_backend& f, const char* kind) {
    try {
      (void)f.b->prepare({"cuda-rt", 0, cuda::own_routes::batch_any_order, direction::h2d, kind, 4096});
    } catch (const skip_point& e) {
      return std::string(e.what());
    } catch (const std::exception& e) {
      return std::string("not skipped: ") + e.what();
    }
    return std::string("prepared");
  };
  fake_backend old_driver(true, {}, 12060);
  const std::string why = skip_reason(old_driver, "pageable");
  EXPECT_NE(why.find("cudaMemcpyBatchAsync needs a CUDA 12.8 driver"), std::string::npos) << why;
  EXPECT_NE(why.find("12.6"), std::string::npos) << why;
  fake_backend f;
  for (const char* kind : {"pinned", "registered", "managed"}) {
    const std::string r = skip_reason(f, kind);
    EXPECT_NE(r.find("for pageable memory"), std::string::npos) << kind << ": " << r;
  }
  // A new enough driver and a pageable kind get past the checks, to the
  // device (which the fake has not: its streams throw).
  EXPECT_NE(skip_reason(f, "pageable").find("not skipped"), std::string::npos);
}

TEST(CudaBatchRoute, IsListedForHostToDeviceAndBack) {
  fake_backend f;
  const auto routes = f.b->routes();
  const auto r = std::find_if(routes.begin(), routes.end(),
                              [](const route_info& i) { return i.name == cuda::own_routes::batch_any_order; });
  ASSERT_NE(r, routes.end());
  EXPECT_EQ(r->directions, (std::vector<direction>{direction::h2d, direction::d2h}));
  EXPECT_NE(r->description.find("cudaMemcpyBatchAsync"), std::string::npos) << r->description;
  EXPECT_EQ(to_string(cuda::own_routes::batch_any_order), std::string("batch-any-order"));
  EXPECT_EQ(parse_route_kind("batch-any-order"), cuda::own_routes::batch_any_order);
}
