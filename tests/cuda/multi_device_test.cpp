// Every device at once and the peer matrix on the GPUs there are (one on the
// single-H100 machine: its group of one and the matrix's diagonal; every pair
// on a multi-GPU machine), through both CUDA backends.
#include <xfer/core/concurrent.hpp>
#include <xfer/core/peer_matrix.hpp>
#include <xfer/core/reporter.hpp>

#include "gpu.hpp"

using namespace xfer;

namespace {

measure_options quick() {
  measure_options o = measure_options::quick();
  o.max_time_s = 0.02;
  return o;
}

}  // namespace

TEST(CudaTogether, EveryDeviceAtOnceMovesAndVerifiesItsData) {
  XFER_REQUIRE_GPU();
  for (const char* name : {"cuda-rt", "cuda-drv"}) {
    auto& b = *cuda::test::gpu().backend(name);
    for (direction d : {direction::h2d, direction::d2h, direction::bidir}) {
      std::vector<point_spec> specs;
      for (const auto& dev : b.devices()) specs.push_back({name, dev.index, route_kind::copy_async, d, "pinned", 16 << 20, -1});
      const std::atomic<bool> stop{false};
      bool abandoned = false;
      const auto results = measure_together(b, specs, quick(), stop, abandoned);
      EXPECT_FALSE(abandoned);
      ASSERT_EQ(results.size(), specs.size() + 1);
      for (const auto& r : results) {
        EXPECT_EQ(r.status, point_status::ok) << name << " " << to_string(d) << " device " << r.spec.device << ": " << r.reason;
        EXPECT_TRUE(r.verified);
      }
      EXPECT_GT(results.back().gbps(), 0);
    }
  }
}

TEST(CudaPeer, EveryPairCopiesAndSaysHow) {
  XFER_REQUIRE_GPU();
  for (const char* name : {"cuda-rt", "cuda-drv"}) {
    auto& b = *cuda::test::gpu().backend(name);
    std::vector<int> devices;
    for (const auto& dev : b.devices()) devices.push_back(dev.index);
    collecting_reporter out;
    std::vector<point_result> results;
    const std::atomic<bool> stop{false};
    run_peer_matrix(b, peer_points(name, devices, {16 << 20}), quick(), out, stop, results);
    ASSERT_EQ(results.size(), devices.size() * devices.size());
    for (const auto& r : results) {
      EXPECT_EQ(r.status, point_status::ok) << name << " " << r.spec.device << "->" << r.spec.peer << ": " << r.reason;
      EXPECT_TRUE(r.verified);
      EXPECT_FALSE(r.peer_path.empty());
    }
  }
}
