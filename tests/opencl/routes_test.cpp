// Every route x direction x host memory kind on PoCL, with data verification:
// each combination either moves the pattern intact or is skipped for a reason
// that says why it cannot apply.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <xfer/core/errors.hpp>

#include "opencl/host_memory.hpp"
#include "pocl.hpp"

namespace xfer::opencl {
namespace {

struct combo {
  std::string route;
  direction dir;
  std::string kind;
};

// The routes' contract, written out: the test fails if routes() drifts from it.
const std::vector<std::pair<std::string, std::vector<direction>>>& expected_routes() {
  using enum direction;
  static const std::vector<std::pair<std::string, std::vector<direction>>> r{
      {"copy-async", {h2d, d2h, bidir, rw, d2d}},
      {"copy-sync", {h2d, d2h, rw}},
      {"map", {h2d, d2h, rw}},
      {"kernel-host", {h2d, d2h, bidir, rw}},
      {"kernel-device", {d2d}},
  };
  return r;
}

const std::vector<std::string> all_kinds{"pageable",       "pageable-unaligned", "aligned",    "huge",
                                         "alloc-host-ptr", "use-host-ptr",       "svm-coarse", "svm-fine"};

std::vector<combo> all_combos() {
  std::vector<combo> out;
  for (const auto& [route, dirs] : expected_routes())
    for (direction d : dirs) {
      if (d == direction::d2d) {
        out.push_back({route, d, "none"});
        continue;
      }
      for (const auto& k : all_kinds) out.push_back({route, d, k});
    }
  return out;
}

TEST(Routes, TableMatchesTheContract) {
  XFER_REQUIRE_POCL(b);
  const auto routes = b->routes();
  ASSERT_EQ(routes.size(), expected_routes().size());
  for (std::size_t i = 0; i < routes.size(); ++i) {
    EXPECT_EQ(routes[i].name, expected_routes()[i].first);
    EXPECT_EQ(routes[i].directions, expected_routes()[i].second) << routes[i].name;
    EXPECT_FALSE(routes[i].description.empty());
  }
}

class EveryRoute : public ::testing::TestWithParam<combo> {};

TEST_P(EveryRoute, MovesThePatternIntactOrSkipsWithAReason) {
  XFER_REQUIRE_POCL(b);
  const combo c = GetParam();
  const device_caps caps = b->context_for(0).caps;
  const bool plain_kind = !is_opencl_kind(c.kind) && c.kind != "none";
  // Sizes that exercise the kernel's vector body and byte tail, and a page boundary.
  for (std::uint64_t bytes : {std::uint64_t{1}, std::uint64_t{13}, std::uint64_t{4096 + 5}, std::uint64_t{256} << 10}) {
    SCOPED_TRACE(fmt::format("{} {} {} {} B", c.route, to_string(c.dir), c.kind, bytes));
    const point_spec p{b->name(), 0, c.route, c.dir, c.kind, bytes};
    std::unique_ptr<transfer> t;
    try {
      t = b->prepare(p);
    } catch (const skip_point& e) {
      const std::string why = e.what();
      if (c.route == "kernel-host" && plain_kind) {
        EXPECT_NE(why.find("cl_mem or SVM"), std::string::npos) << why;
        return;
      }
      if (!kind_unavailable_reason(c.kind, caps).empty()) {
        EXPECT_EQ(why, kind_unavailable_reason(c.kind, caps));
        GTEST_SKIP() << why;
      }
      FAIL() << "unexpected skip: " << why;
    }
    ASSERT_FALSE(c.route == "kernel-host" && plain_kind) << "a kernel cannot reach plain host memory";
    ASSERT_NO_THROW(t->verify());

    const bool events = c.route == "copy-async" || c.route.rfind("kernel", 0) == 0;
    EXPECT_EQ(t->timer_kind(), events ? "event" : "wall");
    EXPECT_EQ(t->bytes_per_rep(), c.dir == direction::bidir || c.dir == direction::rw ? 2 * bytes : bytes);
    const auto first = t->setup_costs();
    EXPECT_GE(first.alloc_s, 0);
    EXPECT_GE(first.touch_s, 0);

    const sample s = t->run(3);
    EXPECT_GT(s.wall_seconds, 0);
    EXPECT_GE(s.seconds, 0);
    if (events) {
      EXPECT_TRUE(s.parts.count("queued_to_end"));
      EXPECT_GE(s.parts.at("queued_to_end"), s.seconds * 0.999);  // queued comes before start
    }
    if (c.dir == direction::bidir) {
      EXPECT_TRUE(s.parts.count("h2d"));
      EXPECT_TRUE(s.parts.count("d2h"));
    }
    if (c.route == "map") {
      for (const char* part : {"map", "memcpy", "unmap"}) EXPECT_TRUE(s.parts.count(part)) << part;
    }
    // Still correct after repeated use.
    ASSERT_NO_THROW(t->verify());
  }
}

INSTANTIATE_TEST_SUITE_P(Pocl, EveryRoute, ::testing::ValuesIn(all_combos()),
                         [](const ::testing::TestParamInfo<combo>& info) {
                           std::string name = info.param.route + "_" + to_string(info.param.dir) + "_" + info.param.kind;
                           for (char& ch : name)
                             if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           return name;
                         });

}  // namespace
}  // namespace xfer::opencl
