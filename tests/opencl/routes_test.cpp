// Every route x direction x host memory kind on PoCL, with data verification:
// each combination either moves the pattern intact or is skipped for a reason
// that says why it cannot apply. And the check of every timed sample
// (poison_sample/check_sample) catches a batch that landed wrong or not at all.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <xfer/core/errors.hpp>

#include "opencl/host_memory.hpp"
#include "opencl/routes.hpp"
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

std::string combo_name(const ::testing::TestParamInfo<combo>& info) {
  std::string name = info.param.route + "_" + to_string(info.param.dir) + "_" + info.param.kind;
  for (char& ch : name)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return name;
}

INSTANTIATE_TEST_SUITE_P(Pocl, EveryRoute, ::testing::ValuesIn(all_combos()), combo_name);

// The runner's per-sample check: poison_sample() before a batch, check_sample() after it. A
// batch that lands passes; one that never lands, or leaves one wrong byte in
// any of its destinations, throws verification_error naming that destination.
class SampleCheck : public ::testing::TestWithParam<combo> {};

// What check_sample() checks, in order (as corrupt_destination_for_testing numbers them).
std::vector<std::string> destinations(direction d) {
  switch (d) {
    case direction::bidir: return {"bidir h2d destination (device buffer)", "bidir d2h destination (host memory)"};
    case direction::rw: return {"rw write destination (device buffer)", "rw read-back destination (host memory)"};
    case direction::h2d: return {"h2d destination (device buffer)"};
    case direction::d2h: return {"d2h destination (host memory)"};
    case direction::d2d: return {"d2d destination (device buffer)"};
  }
  return {};
}

TEST_P(SampleCheck, PassesALandedBatchAndCatchesAWrongOrMissingOne) {
  XFER_REQUIRE_POCL(b);
  const combo c = GetParam();
  // Past a page, with a byte tail after the kernel's 16-byte vectors.
  const std::uint64_t bytes = 4096 + 5;
  std::unique_ptr<transfer> t;
  try {
    t = b->prepare({b->name(), 0, c.route, c.dir, c.kind, bytes});
  } catch (const skip_point& e) {
    GTEST_SKIP() << e.what();  // EveryRoute checks the reasons
  }
  ASSERT_NO_THROW(t->verify());
  for (int i = 0; i < 2; ++i) {
    t->poison_sample();
    t->run(3);
    ASSERT_NO_THROW(t->check_sample()) << "sample " << i;
  }

  // A batch that never ran: poison_sample() poisoned what check_sample() reads.
  t->poison_sample();
  EXPECT_THROW(t->check_sample(), verification_error);

  const auto names = destinations(c.dir);
  for (std::size_t which = 0; which < names.size(); ++which)
    for (std::size_t at : {std::size_t{0}, std::size_t{bytes - 1}}) {
      SCOPED_TRACE(fmt::format("{}, byte {}", names[which], at));
      t->poison_sample();
      t->run(3);
      ASSERT_TRUE(corrupt_destination_for_testing(*t, which, at));
      try {
        t->check_sample();
        ADD_FAILURE() << "check_sample() passed a corrupted destination";
      } catch (const verification_error& e) {
        EXPECT_TRUE(std::string(e.what()).starts_with(fmt::format("{}: byte {} of {}", names[which], at, bytes)))
            << e.what();
      }
      // Flip it back: rw's host destination is also its source.
      ASSERT_TRUE(corrupt_destination_for_testing(*t, which, at));
    }
  EXPECT_FALSE(corrupt_destination_for_testing(*t, names.size(), 0));

  // Good data again, good samples again.
  t->poison_sample();
  t->run(3);
  EXPECT_NO_THROW(t->check_sample());
  EXPECT_NO_THROW(t->verify());
}

// Every combination that can run: kernels never reach the plain kinds.
std::vector<combo> runnable_combos() {
  std::vector<combo> out;
  for (const combo& c : all_combos())
    if (c.route != "kernel-host" || is_opencl_kind(c.kind)) out.push_back(c);
  return out;
}

INSTANTIATE_TEST_SUITE_P(Pocl, SampleCheck, ::testing::ValuesIn(runnable_combos()), combo_name);

}  // namespace
}  // namespace xfer::opencl
