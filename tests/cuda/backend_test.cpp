// What the CUDA backends say of themselves, bad input, and the gate with
// core's timed-batch loop. (Every route x direction x host kind verifying and
// timing, or skipping with its reason, is the backend conformance suite's:
// conformance_test.cpp.)
#include <chrono>
#include <cstdlib>
#include <stdexcept>
#include <thread>
#include <tuple>
#include <xfer/core/errors.hpp>
#include <xfer/core/timing.hpp>

#include <xfer/mem/settings.hpp>

#include "../conformance/corrupt_places.hpp"
#include "cuda/device_context.hpp"
#include "cuda/cuda_routes.hpp"
#include "gpu.hpp"

using namespace xfer;
using namespace xfer::cuda;

// ---- the backend's description of itself ----------------------------------------

// (Routes and kinds: BackendContract in conformance_test.cpp.)
TEST(CudaBackend, DevicesAndVersionsAreDescribed) {
  XFER_REQUIRE_GPU();
  for (const char* name : {"cuda-rt", "cuda-drv"}) {
    cuda_backend& b = *test::gpu().backend(name);
    const auto devices = b.devices();
    ASSERT_FALSE(devices.empty());
    EXPECT_FALSE(devices[0].name.empty());
    EXPECT_GT(devices[0].memory_bytes, 0u);
    EXPECT_TRUE(devices[0].details.count("pci_bus_id"));
    EXPECT_TRUE(devices[0].details.count("compute_capability"));
    const auto v = b.versions();
    EXPECT_TRUE(v.count("driver") && v.count("runtime")) << name;
  }
}

// ---- bad input ---------------------------------------------------------------

TEST(CudaBadInput, SizeOverDeviceMemoryIsSkippedWithTheNumbers) {
  XFER_REQUIRE_GPU();
  for (const char* name : {"cuda-rt", "cuda-drv"}) {
    cuda_backend& b = *test::gpu().backend(name);
    const std::uint64_t total = b.devices()[0].memory_bytes;
    for (const point_spec& p : {point_spec{name, 0, route_kind::copy_async, direction::h2d, "pinned", total + 1},
                                point_spec{name, 0, route_kind::copy_sync, direction::d2d, "none", total / 2 + 1},
                                point_spec{name, 0, route_kind::kernel_device, direction::d2d, "none", total / 2 + 1},
                                point_spec{name, 0, route_kind::copy_sync, direction::h2d, "managed", total / 2 + 1}}) {
      try {
        (void)b.prepare(p);
        ADD_FAILURE() << name << " " << p.route << " prepared " << p.bytes << " B";
      } catch (const skip_point& e) {
        EXPECT_NE(std::string(e.what()).find("needs "), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find(" B free of "), std::string::npos) << e.what();
      }
    }
    // ...and the backend carries on.
    auto t = b.prepare({name, 0, route_kind::copy_async, direction::h2d, "pinned", 4096});
    EXPECT_NO_THROW(t->verify());
  }
}

// Points the plan lets through but the route cannot run: the backend skips
// them with the reason. (A device or kind that does not exist never reaches
// the backend: the plan refuses it as bad input, tests/unit/plan_test.cpp.)
TEST(CudaBadInput, ImpossiblePointsAreSkippedWithAReason) {
  XFER_REQUIRE_GPU();
  cuda_backend& b = *test::gpu().backend("cuda-rt");
  const auto skipped = [&](const point_spec& p, const char* mention) {
    try {
      (void)b.prepare(p);
      ADD_FAILURE() << p.route << " " << p.host_memory << " was prepared";
    } catch (const skip_point& e) {
      EXPECT_NE(std::string(e.what()).find(mention), std::string::npos) << e.what();
    }
  };
  // Handed one anyway, the backend says it is a bug, not a skip.
  EXPECT_THROW((void)b.prepare({"cuda-rt", 99, route_kind::copy_sync, direction::h2d, "pinned", 64}), std::logic_error);
  skipped({"cuda-rt", 0, route_kind::kernel_host, direction::h2d, "pageable", 64}, "cannot address");
  skipped({"cuda-rt", 0, cuda::own_routes::latency, direction::h2d, "mapped", 2}, "4 B");
  skipped({"cuda-rt", 0, route_kind::copy_sync, direction::bidir, "pinned", 64}, "bidir");
}

// ---- route batch-any-order -----------------------------------------------------

// Many chunks in one batch (the conformance suite's sizes are one chunk each
// at the default 8 MiB): 4 KiB chunks, the tail partial. Where the driver
// lacks the call the point is skipped, saying so.
TEST(CudaBatch, ManyChunksInOneBatchArriveAndAMissingOneIsCaught) {
  XFER_REQUIRE_GPU();
  // Read when a point is prepared; the inputs before restored at the end.
  struct chunk_inputs {
    xfer::mem::library_inputs before = *xfer::mem::current_inputs();
    chunk_inputs() {
      auto in = before;
      in.staged.push_back({xfer::mem::staged_field::chunk_bytes, "XFER_STAGED_CHUNK_BYTES", "4096"});
      xfer::mem::install_inputs(std::move(in));
    }
    ~chunk_inputs() { xfer::mem::install_inputs(before); }
  } chunk;
  for (const char* name : {"cuda-rt", "cuda-drv"}) {
    cuda_backend& b = *test::gpu().backend(name);
    for (const direction d : {direction::h2d, direction::d2h})
      for (const std::uint64_t n : {std::uint64_t{3 * 4096}, std::uint64_t{9 * 4096 + 7}, std::uint64_t{(1u << 20) + 3}}) {
        SCOPED_TRACE(::testing::Message() << name << " " << to_string(d) << " " << n << " B");
        std::unique_ptr<transfer> t;
        try {
          t = b.prepare({name, 0, cuda::own_routes::batch_any_order, d, "pageable-unaligned", n});
          t->verify();
        } catch (const skip_point& e) {
          const std::string why = e.what();
          EXPECT_NE(why.find("BatchAsync"), std::string::npos) << why;
          GTEST_SKIP() << why;
        }
        t->poison_sample();
        EXPECT_GT(t->run(3).seconds, 0);
        EXPECT_NO_THROW(t->check_sample());
        t->poison_sample();  // no batch ran: the poison stays
        EXPECT_THROW(t->check_sample(), verification_error);
      }
  }
}

// Core's check reaches every place the CUDA routes write: pinned and pageable
// host memory, and device memory checked on the host (small) or by the check
// kernel (past 256 KiB); a byte flipped in any of them fails the check.
TEST(CudaVerify, ACorruptedPlaceOfAnyDirectionFailsTheCheck) {
  XFER_REQUIRE_GPU();
  cuda_backend& b = *test::gpu().backend("cuda-rt");
  for (const std::uint64_t n : {std::uint64_t{4099}, std::uint64_t{(1u << 20) + 3}}) {
    for (const char* kind : {"pinned", "pageable"})
      for (direction d : {direction::h2d, direction::d2h, direction::rw, direction::bidir, direction::d2d}) {
        SCOPED_TRACE(::testing::Message() << "copy-async " << kind << " " << to_string(d) << " " << n << " B");
        auto t = b.prepare({"cuda-rt", 0, route_kind::copy_async, d, d == direction::d2d ? "none" : kind, n});
        xfer::expect_every_corrupted_place_caught(*t);
      }
    for (const auto& [route, d, kind] : {std::tuple{route_kind::kernel_host, direction::d2h, "pinned"},
                                         std::tuple{route_kind::kernel_device, direction::d2d, "none"},
                                         std::tuple{cuda::own_routes::kernel_device_write, direction::d2d, "none"}}) {
      SCOPED_TRACE(::testing::Message() << to_string(route) << " " << n << " B");
      auto t = b.prepare({"cuda-rt", 0, route, d, kind, n});
      xfer::expect_every_corrupted_place_caught(*t);
    }
  }
}

// ---- the gate ----------------------------------------------------------------

TEST(CudaGate, SpinKernelGivesUpAfterItsTimeoutAndSaysSo) {
  XFER_REQUIRE_GPU();
  api& a = test::gpu().backend("cuda-rt")->cuda_api();
  a.make_current(0);
  stream s(a);
  {
    spin_gate g(a, s.get(), 20'000'000);  // 20 ms
    g.close();
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    a.synchronize_stream(s.get());  // returns: the kernel gave up on its own
    g.open();
    EXPECT_TRUE(g.timed_out());
  }
  spin_gate g(a, s.get());
  g.close();
  g.open();
  a.synchronize_stream(s.get());
  EXPECT_FALSE(g.timed_out());
}

TEST(CudaGate, AnExceptionWhileQueueingOpensTheGate) {
  XFER_REQUIRE_GPU();
  api& a = test::gpu().backend("cuda-drv")->cuda_api();
  device_context ctx(a, 0);
  ctx.make_current();
  timed_batches loop(ctx.gate);
  event_timer timer(ctx);
  EXPECT_THROW(loop.run(timer, 10,
                        [](std::size_t rep, std::size_t) {
                          if (rep == 3) throw std::runtime_error("enqueue failed");
                        }),
               std::runtime_error);
  EXPECT_FALSE(ctx.gate.is_closed());
  const sample s = loop.run(timer, 10, [](std::size_t, std::size_t) {});
  EXPECT_FALSE(ctx.gate.is_closed());
  EXPECT_GE(s.seconds, 0);
  EXPECT_TRUE(s.gate_fallback.empty());
}

// A call that blocks the host while the gate is closed (what a pageable copy
// does), played by a sleep: the spin kernel gives up, and core's loop runs the
// sub-batch again ungated, runs ungated from then on, and says so.
TEST(CudaGate, AGateThatCannotHoldFallsBackUngatedAndSaysSo) {
  XFER_REQUIRE_GPU();
  api& a = test::gpu().backend("cuda-rt")->cuda_api();
  device_context ctx(a, 0);
  ctx.make_current();
  spin_gate g(a, ctx.s0.get(), 20'000'000);  // 20 ms
  timed_batches loop(g);
  event_timer timer(ctx);
  std::size_t calls = 0, blocked = 0;
  const sample s = loop.run(timer, 2, [&](std::size_t, std::size_t) {
    ++calls;
    if (g.is_closed()) {
      ++blocked;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  });
  EXPECT_EQ(blocked, 2u);
  EXPECT_EQ(calls, 4u) << "the sub-batch ran again, ungated";
  EXPECT_NE(s.gate_fallback.find("its spin kernel gives up after 0.02 s"), std::string::npos) << s.gate_fallback;
  blocked = 0;
  const sample next = loop.run(timer, 2, [&](std::size_t, std::size_t) { blocked += g.is_closed(); });
  EXPECT_EQ(blocked, 0u) << "later batches never close the gate";
  EXPECT_EQ(next.gate_fallback, s.gate_fallback);
}

// Many more operations than a stream's launch queue holds behind one closed
// gate: the loop must split them into sub-batches rather than deadlock.
TEST(CudaGate, LargeRepetitionCountsAreSplitIntoSubBatches) {
  XFER_REQUIRE_GPU();
  for (const char* name : {"cuda-rt", "cuda-drv"}) {
    cuda_backend& b = *test::gpu().backend(name);
    auto t = b.prepare({name, 0, route_kind::copy_async, direction::rw, "pinned", 4});
    const auto t0 = std::chrono::steady_clock::now();
    const sample s = t->run(5000);  // 10000 copies
    EXPECT_GT(s.seconds, 0);
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(10));
  }
}
