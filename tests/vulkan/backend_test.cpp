// The Vulkan backend's own promises on the device under test (lavapipe in
// CI, device_under_test.hpp): what it names and reports,
// the import rule, the memory types each kind picks, and the gate.
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <gtest/gtest.h>
#include <memory>
#include <xfer/core/errors.hpp>
#include <xfer/mem/kinds.hpp>
#include <xfer/mem/settings.hpp>

#include "../conformance/corrupt_places.hpp"
#include "device_under_test.hpp"
#include "../support/scoped_inputs.hpp"
#include "vulkan/routes.hpp"
#include "vulkan/memory.hpp"
#include "vulkan/timing.hpp"

namespace xfer::vulkan {
namespace {

// `b` refuses to prepare `spec`, skipping it with a reason that names `reason`.
void expect_skip_naming(backend& b, const point_spec& spec, const std::string& reason) {
  try {
    b.prepare(spec);
    ADD_FAILURE() << "prepared where a skip naming '" << reason << "' was due";
  } catch (const skip_point& e) {
    EXPECT_NE(std::string(e.what()).find(reason), std::string::npos) << e.what();
  }
}

TEST(VulkanBackend, NamesItselfByDriverAndSaysItIsACpuDevice) {
  REQUIRE_DEVICE(b);
  if (b->name() != "vulkan:llvmpipe") GTEST_SKIP() << "lavapipe's own names; the device under test is " << b->name();
  EXPECT_EQ(b->name(), "vulkan:llvmpipe");
  EXPECT_EQ(b->caps().type, "cpu");
  EXPECT_NE(b->description().find("CPU device"), std::string::npos) << b->description();
  const auto d = b->devices();
  ASSERT_EQ(d.size(), 1u);
  EXPECT_GT(d[0].memory_bytes, 0u);
  EXPECT_FALSE(d[0].details.at("memory_types").empty());
  EXPECT_FALSE(b->versions().at("vulkan_driver").empty());
}

TEST(VulkanBackend, DeviceTokensAreUniqueAndLowerCase) {
  device_caps a, c;
  a.driver_name = "NVIDIA";
  c.driver_name = "NVIDIA";
  const auto t = device_tokens({a, c});
  EXPECT_EQ(t[0], "nvidia");
  EXPECT_EQ(t[1], "nvidia-1");
}

TEST(VulkanMemory, KindsPickATypeWithTheirFlags) {
  REQUIRE_DEVICE(b);
  const auto& caps = b->caps();
  for (auto cls : {mem_class::host_coherent, mem_class::host_cached, mem_class::device_local_host_visible, mem_class::device}) {
    const auto t = find_memory_type(caps, cls);
    ASSERT_TRUE(t.has_value());
  }
  const auto hc = caps.memory.memoryTypes[*find_memory_type(caps, mem_class::host_coherent)].propertyFlags;
  EXPECT_TRUE(hc & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT);
  EXPECT_TRUE(hc & VK_MEMORY_PROPERTY_HOST_COHERENT_BIT);
  const auto dl = caps.memory.memoryTypes[*find_memory_type(caps, mem_class::device_local_host_visible)].propertyFlags;
  EXPECT_TRUE(dl & VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT);
}

TEST(VulkanMemory, AMissingTypeIsUnavailableWithTheReason) {
  device_caps c;  // no memory types at all
  c.memory.memoryTypeCount = 1;
  c.memory.memoryTypes[0].propertyFlags = VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT;
  EXPECT_NE(kind_unavailable_reason("device-local-host-visible", c).find("no DEVICE_LOCAL|HOST_VISIBLE"), std::string::npos);
  EXPECT_NE(kind_unavailable_reason("imported", c).find("VK_EXT_external_memory_host"), std::string::npos);
  EXPECT_EQ(kind_unavailable_reason("pageable", c), "");
}

TEST(VulkanMemory, AnUnalignedPointerIsRefusedWithTheDriversRule) {
  REQUIRE_DEVICE(b);
  if (!b->caps().host_import) GTEST_SKIP() << "the device has no VK_EXT_external_memory_host";
  const std::size_t align = b->caps().import_alignment;
  ASSERT_GT(align, 1u);
  void* p = std::aligned_alloc(align, 4 * align);
  ASSERT_NE(p, nullptr);
  auto* bytes = static_cast<std::byte*>(p);
  try {
    (void)buffer::import(b->context(), bytes + 16, align);
    ADD_FAILURE() << "an unaligned pointer was imported";
  } catch (const skip_point& e) {
    EXPECT_NE(std::string(e.what()).find("minImportedHostPointerAlignment"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("16 B past"), std::string::npos) << e.what();
  }
  EXPECT_THROW((void)buffer::import(b->context(), bytes, align + 4), skip_point);  // size, too
  {
    buffer ok = buffer::import(b->context(), bytes, 2 * align);
    EXPECT_TRUE(ok);
  }
  std::free(p);
}

TEST(VulkanRoutes, ZeroBytesAndPageableKernelPointsAreSkippedWithAReason) {
  REQUIRE_DEVICE(b);
  EXPECT_THROW(b->prepare({b->name(), 0, vulkan::own_routes::copy, direction::h2d, "host-coherent", 0}), skip_point);
  expect_skip_naming(*b, {b->name(), 0, route_kind::kernel_host, direction::h2d, "pageable", 4096}, "host-coherent");
}

// The copy route's probe knobs (bench/vulkan_copy_probe.sh): a value the
// front door does not know is bad input naming the values it takes; a known
// one runs, and the run's settings record it.
TEST(VulkanRoutes, TheCopyQueueKnobIsCheckedAtTheFrontDoorAndRecorded) {
  REQUIRE_DEVICE(b);
  {
    xfer::test::scoped_env bogus("XFER_VK_COPY_QUEUES", "bogus");
    try {
      (void)mem::inputs_from_environment();
      ADD_FAILURE() << "no error";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("transfer, compute or mixed"), std::string::npos) << e.what();
    }
  }
  xfer::test::scoped_inputs mixed([](mem::library_inputs& in) { in.vulkan_copy.queues = "mixed"; });
  EXPECT_NO_THROW(b->prepare({b->name(), 0, vulkan::own_routes::copy, direction::bidir, "host-coherent", 4096}));
  bool recorded = false;
  for (const auto& s : mem::recorded_settings())
    recorded = recorded || (s.component == "vulkan-copy" && s.name == "queues" && s.value == "mixed");
  EXPECT_TRUE(recorded);
}

// The copy chunk cuts the copy into regions: a region size that does not
// divide the buffer still moves every byte; a value that is no byte count is
// refused at the front door.
TEST(VulkanRoutes, TheCopyChunkKnobMovesEveryByteAndRefusesAMalformedValue) {
  REQUIRE_DEVICE(b);
  {
    xfer::test::scoped_inputs chunk([](mem::library_inputs& in) { in.vulkan_copy.chunk_bytes = 1000; });
    for (direction d : {direction::h2d, direction::d2h}) {
      auto t = b->prepare({b->name(), 0, vulkan::own_routes::copy, d, "host-coherent", 4096});
      EXPECT_NO_THROW(t->verify());
    }
  }
  xfer::test::scoped_env bad("XFER_VK_COPY_CHUNK", "4k");
  EXPECT_THROW((void)mem::inputs_from_environment(), std::invalid_argument);
}

// Core's check reaches every place of every direction the copy route writes:
// mapped host memory, pageable memory staged by the application, and device
// memory the CPU cannot map (copied out by the device).
TEST(VulkanRoutes, ACorruptedPlaceOfAnyDirectionFailsTheCheck) {
  REQUIRE_DEVICE(b);
  for (const char* kind : {"host-coherent", "pageable"})
    for (direction d : {direction::h2d, direction::d2h, direction::rw, direction::bidir, direction::d2d}) {
      SCOPED_TRACE(::testing::Message() << kind << " " << to_string(d));
      auto t = b->prepare({b->name(), 0, vulkan::own_routes::copy, d, d == direction::d2d ? "none" : kind, 4099});
      xfer::expect_every_corrupted_place_caught(*t);
    }
}

// The gate holds a submission until it opens: nothing runs while it is closed.
TEST(VulkanGate, HoldsTheQueueUntilItOpens) {
  REQUIRE_DEVICE(b);
  device_context& dev = b->context();
  timeline_gate g(dev);
  batch_timer t(dev, {dev.copy_queue(0)}, &g);
  buffer src = buffer::allocate(dev, 4096, mem_class::host_coherent);
  buffer dst = buffer::allocate(dev, 4096, mem_class::host_coherent);
  std::memset(src.mapped(), 0x5a, 4096);
  std::memset(dst.mapped(), 0, 4096);
  g.close();
  t.start();
  VkBufferCopy region{0, 0, 4096};
  vk().vkCmdCopyBuffer(t.cmd(0), src.get(), dst.get(), 1, &region);
  t.stop();
  // Give a device that ignored the gate time to run the copy.
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(static_cast<unsigned char>(dst.mapped()[0]), 0u) << "the copy ran behind a closed gate";
  g.open();
  EXPECT_GE(t.seconds(), 0.0);
  EXPECT_EQ(static_cast<unsigned char>(dst.mapped()[4095]), 0x5au);
  EXPECT_EQ(t.kind(), clock_kind::event);
}

// blocks-list (sweep --blocks): one vkCmdCopyBuffer of a region per block,
// scattered by the fixed-seed list; core's check reads the destination back
// in source order, so a byte wrong anywhere in it is caught.
TEST(VulkanBlocksList, MovesEveryBlockAndTheCheckCatchesACorruptOne) {
  REQUIRE_DEVICE(b);
  for (direction d : {direction::h2d, direction::d2h})
    for (const char* kind : {"pageable", "host-coherent"}) {
      SCOPED_TRACE(::testing::Message() << to_string(d) << " " << kind);
      point_spec p{b->name(), 0, own_routes::blocks_list, d, kind, 48 * 4096};
      p.block_bytes = 4096;
      auto t = b->prepare(p);
      EXPECT_EQ(t->bytes_per_rep(), p.bytes);
      EXPECT_NE(t->note().find("48 blocks"), std::string::npos) << t->note();
      expect_every_corrupted_place_caught(*t);
    }
  point_spec listed{b->name(), 0, own_routes::blocks_list, direction::h2d, "host-coherent", 16 * 4096};
  listed.block_bytes = 4096;
  listed.block_list = std::make_shared<const std::vector<block_pair_spec>>(std::vector<block_pair_spec>{{0, 1}});
  expect_skip_naming(*b, listed, "scattered list");
}

}  // namespace
}  // namespace xfer::vulkan
