// Routes cpu-store-latency / cpu-store-nt-latency on the device under test
// (lavapipe in CI): the ping-pong runs and checks its data, a wrong store or
// a poisoned answer fails the point, and every bounded wait ends with its
// reason instead of hanging. Each test is a few rounds: well under a second.
#include <gtest/gtest.h>
#include <map>
#include <memory>
#include <string>
#include <vector>
#include <xfer/core/errors.hpp>
#include <xfer/core/sweep.hpp>

#include "device_under_test.hpp"
#include "vulkan/routes.hpp"
#include "vulkan/store_latency.hpp"

namespace xfer::vulkan {
namespace {

// The route's transfer, with its limits at hand; skips where the device
// cannot take the point (no BAR type, no SPIR-V in this build).
std::unique_ptr<store_latency_transfer> prepare(vulkan_backend& b, route_kind r, std::uint64_t bytes) {
  std::unique_ptr<transfer> t = b.prepare({b.name(), 0, r, direction::h2d, "device-local-host-visible", bytes});
  auto* l = dynamic_cast<store_latency_transfer*>(t.get());
  if (!l) throw std::logic_error("the route did not make a store_latency_transfer");
  t.release();
  return std::unique_ptr<store_latency_transfer>(l);
}

#define PREPARE_OR_SKIP(var, b, route, bytes)           \
  std::unique_ptr<store_latency_transfer> var;          \
  try {                                                 \
    var = prepare(*b, route, bytes);                    \
  } catch (const skip_point& e) {                       \
    GTEST_SKIP() << e.what();                           \
  }

// Sets the limits `edit` makes of t's (a fault hook, a shorter bound) and
// returns the ones it had, to set back once the fault has been seen.
template <class Edit>
store_latency_limits set_limits(store_latency_transfer& t, Edit edit) {
  const store_latency_limits usual = t.limits();
  store_latency_limits l = usual;
  edit(l);
  t.set_limits(l);
  return usual;
}

bool mentions(const std::exception& e, const char* what) {
  return std::string(e.what()).find(what) != std::string::npos;
}

// One sample of `t` whose round was never stored ends in a timeout naming
// `what`: not an answer, and not wrong data.
void expect_timeout(store_latency_transfer& t, const char* what) {
  try {
    (void)t.run(1);
    ADD_FAILURE() << "a round that was never stored was answered";
  } catch (const verification_error& e) {
    ADD_FAILURE() << "a missing store is a timeout, not wrong data: " << e.what();
  } catch (const std::runtime_error& e) {
    EXPECT_TRUE(mentions(e, what)) << e.what();
  }
}

TEST(VulkanStoreLatency, EightAndSixtyFourBytesRoundTripAndAreChecked) {
  REQUIRE_DEVICE(b);
  for (route_kind r : {vulkan::own_routes::cpu_store_latency, vulkan::own_routes::cpu_store_nt_latency})
    for (std::uint64_t bytes : {8u, 64u}) {
      SCOPED_TRACE(::testing::Message() << to_string(r) << " " << bytes << " B");
      PREPARE_OR_SKIP(t, b, r, bytes);
      EXPECT_EQ(t->timer_kind(), clock_kind::wall);
      EXPECT_EQ(t->bytes_per_rep(), bytes);
      EXPECT_NE(t->note().find("round trip"), std::string::npos) << t->note();
      t->verify();
      t->poison_sample();
      const sample s = t->run(4);
      EXPECT_GT(s.seconds, 0);
      t->check_sample();  // the last round's answer, and the BAR as the device reads it
    }
}

TEST(VulkanStoreLatency, RouteSaysItIsARoundTrip) {
  REQUIRE_DEVICE(b);
  int found = 0;
  for (const auto& r : b->routes())
    if (r.name == vulkan::own_routes::cpu_store_latency || r.name == vulkan::own_routes::cpu_store_nt_latency) {
      ++found;
      EXPECT_NE(r.description.find("round trip"), std::string::npos) << r.description;
    }
  EXPECT_EQ(found, 2);
}

TEST(VulkanStoreLatency, APoisonedAnswerFailsTheCheck) {
  REQUIRE_DEVICE(b);
  PREPARE_OR_SKIP(t, b, vulkan::own_routes::cpu_store_latency, 8);
  t->verify();
  t->poison_sample();  // as if the next sample never reached the device
  EXPECT_THROW(t->check_sample(), verification_error);
}

TEST(VulkanStoreLatency, AWrongStoreFailsVerificationWithWhatTheDeviceSaw) {
  REQUIRE_DEVICE(b);
  PREPARE_OR_SKIP(t, b, vulkan::own_routes::cpu_store_latency, 64);
  const auto usual = set_limits(*t, [](store_latency_limits& l) {
    l.corrupt_round = 1;
    l.max_polls = 1000;  // the shader's bound on the round: it gives up quickly
  });
  try {
    (void)t->run(2);
    ADD_FAILURE() << "a wrong store passed";
  } catch (const verification_error& e) {
    EXPECT_TRUE(mentions(e, "word 15 of the stored 64 B held")) << e.what();
  }
  t->set_limits(usual);
  EXPECT_NO_THROW(t->verify()) << "the transfer works again once its stores are right";
}

TEST(VulkanStoreLatency, TheShadersBoundEndsARoundNeverStored) {
  REQUIRE_DEVICE(b);
  PREPARE_OR_SKIP(t, b, vulkan::own_routes::cpu_store_nt_latency, 8);
  set_limits(*t, [](store_latency_limits& l) {
    l.skip_round = 1;
    l.max_polls = 1000;
  });
  expect_timeout(*t, "did not become visible to the device within the shader's bound of 1000 polls");
}

TEST(VulkanStoreLatency, TheCpusBoundEndsARoundNeverAnsweredAndStopsTheShader) {
  REQUIRE_DEVICE(b);
  PREPARE_OR_SKIP(t, b, vulkan::own_routes::cpu_store_latency, 8);
  const auto usual = set_limits(*t, [](store_latency_limits& l) {
    l.skip_round = 1;
    l.max_polls = 1u << 30;  // the shader would wait for minutes: the CPU gives up first, and stops it
    l.answer_timeout_s = 0.05;
  });
  expect_timeout(*t, "no answer from the device to round 1 of 1 within 0.05 s");
  t->set_limits(usual);
  EXPECT_NO_THROW(t->verify()) << "the dispatch ended, and the next one runs";
}

// Issue 18 asks for an 8-byte and a 64-byte store: what a sweep given no
// sizes measures these routes at; sizes asked for are measured as asked.
TEST(VulkanStoreLatency, ASweepGivenNoSizesMeasuresEightAndSixtyFourBytes) {
  REQUIRE_DEVICE(b);
  sweep_spec s;
  s.routes = {"cpu-store-latency", "cpu-store-nt-latency", "cpu-store"};
  s.host_memory = {"device-local-host-visible"};
  s.sizes = default_sizes();
  s.sizes_given = false;
  std::map<route_kind, std::vector<std::uint64_t>> sizes;
  for (const auto& p : expand(*b, s)) sizes[p.route].push_back(p.bytes);
  const std::vector<std::uint64_t> eight_and_64{8, 64};
  EXPECT_EQ(sizes[vulkan::own_routes::cpu_store_latency], eight_and_64);
  EXPECT_EQ(sizes[vulkan::own_routes::cpu_store_nt_latency], eight_and_64);
  EXPECT_EQ(sizes[vulkan::own_routes::cpu_store], default_sizes()) << "a curve keeps the sweep's grid";
  s.sizes = {4, 4096};
  s.sizes_given = true;
  sizes.clear();
  for (const auto& p : expand(*b, s)) sizes[p.route].push_back(p.bytes);
  EXPECT_EQ(sizes[vulkan::own_routes::cpu_store_latency], s.sizes);
}

TEST(VulkanStoreLatency, OtherKindsAndLargeStoresAreSkippedWithTheReason) {
  REQUIRE_DEVICE(b);
  try {
    b->prepare({b->name(), 0, vulkan::own_routes::cpu_store_latency, direction::h2d, "host-coherent", 8});
    ADD_FAILURE() << "prepared on host memory";
  } catch (const skip_point& e) {
    EXPECT_TRUE(mentions(e, "through the BAR")) << e.what();
  }
  try {
    b->prepare({b->name(), 0, vulkan::own_routes::cpu_store_latency, direction::h2d, "device-local-host-visible", 8192});
    ADD_FAILURE() << "prepared a store of 8 KiB";
  } catch (const skip_point& e) {
    EXPECT_TRUE(mentions(e, "up to 4096 B")) << e.what();
  }
}

}  // namespace
}  // namespace xfer::vulkan
