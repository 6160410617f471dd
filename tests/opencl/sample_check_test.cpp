// The check of every timed sample (poison_sample/check_sample) on PoCL, for
// every route x direction x host kind that runs: it passes a batch that
// landed and catches one that landed wrong or not at all, naming the
// destination. (That every combination verifies and times, or is skipped with
// its reason, is the backend conformance suite's: conformance_test.cpp.)
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <xfer/core/errors.hpp>

#include "../conformance/corrupt_places.hpp"
#include "opencl/host_memory.hpp"
#include "opencl/routes.hpp"
#include "pocl.hpp"

namespace xfer::opencl {
namespace {

struct combo {
  route_kind route;
  direction dir;
  std::string kind;
};

// The routes and their directions (BackendContract in conformance_test.cpp
// fails if routes() drifts from these).
const std::vector<std::pair<route_kind, std::vector<direction>>>& expected_routes() {
  using enum direction;
  static const std::vector<std::pair<route_kind, std::vector<direction>>> r{
      {route_kind::copy_async, {h2d, d2h, bidir, rw, d2d}},
      {route_kind::copy_sync, {h2d, d2h, rw}},
      {opencl::own_routes::map, {h2d, d2h, rw}},
      {route_kind::kernel_host, {h2d, d2h, bidir, rw}},
      {route_kind::kernel_device, {d2d}},
      {route_kind::staged, {h2d, d2h}},
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

std::string combo_name(const ::testing::TestParamInfo<combo>& info) {
  std::string name = std::string(to_string(info.param.route)) + "_" + to_string(info.param.dir) + "_" + info.param.kind;
  for (char& ch : name)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return name;
}

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
    GTEST_SKIP() << e.what();  // the conformance suite checks the reasons
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

// Every combination that can run: kernels never reach the plain kinds, and
// the staged copier takes only them.
std::vector<combo> runnable_combos() {
  std::vector<combo> out;
  for (const combo& c : all_combos())
    if ((c.route != route_kind::kernel_host || is_opencl_kind(c.kind)) &&
        (c.route != route_kind::staged || !is_opencl_kind(c.kind)))
      out.push_back(c);
  return out;
}

INSTANTIATE_TEST_SUITE_P(Pocl, SampleCheck, ::testing::ValuesIn(runnable_combos()), combo_name);

// blocks-list (sweep --blocks): a write or read per block of the scattered
// list; core's check reads the destination back in source order, so a wrong
// byte anywhere in it is caught, and a list given is refused with the reason.
TEST(BlocksList, MovesEveryBlockAndTheCheckCatchesACorruptOne) {
  XFER_REQUIRE_POCL(b);
  for (direction d : {direction::h2d, direction::d2h})
    for (const char* kind : {"pageable", "alloc-host-ptr"}) {
      SCOPED_TRACE(fmt::format("{} {}", to_string(d), kind));
      point_spec p{b->name(), 0, own_routes::blocks_list, d, kind, 48 * 4096};
      p.block_bytes = 4096;
      auto t = b->prepare(p);
      EXPECT_EQ(t->timer_kind(), clock_kind::wall);
      EXPECT_NE(t->note().find("48 blocks"), std::string::npos) << t->note();
      expect_every_corrupted_place_caught(*t);
    }
  point_spec listed{b->name(), 0, own_routes::blocks_list, direction::h2d, "pageable", 16 * 4096};
  listed.block_bytes = 4096;
  listed.block_list = std::make_shared<const std::vector<block_pair_spec>>(std::vector<block_pair_spec>{{0, 1}});
  EXPECT_THROW(b->prepare(listed), skip_point);
}

}  // namespace
}  // namespace xfer::opencl
