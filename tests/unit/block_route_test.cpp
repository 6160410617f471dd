// The sweep's many-blocks workload (core/block_route.hpp) on the host
// backend, whose "device" is host memory: every way's path, the copier's
// choice and the contiguous baseline run for real, each point verified by
// core; the plan's checks of a block selection; the result file's fields.
#include <algorithm>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <set>
#include <xfer/core/block_route.hpp>
#include <xfer/core/concurrent.hpp>
#include <xfer/core/errors.hpp>
#include <xfer/core/plan.hpp>
#include <xfer/core/sample_check.hpp>
#include <xfer/core/sweep.hpp>
#include <xfer/mem/host_resources.hpp>

#include "../../src/backends/host/host_backend.hpp"
#include "result_json.hpp"
#include "../support/scoped_inputs.hpp"

using namespace xfer;

namespace {

// The copier's choice without the calibration file of whoever runs the tests.
struct no_choice_cache {
  test::scoped_inputs inputs{[](mem::library_inputs& in) { in.blocks_cache.clear(); }};
  no_choice_cache() { mem::forget_block_choices(); }
  ~no_choice_cache() { mem::forget_block_choices(); }
};

point_spec block_point(route_kind r, direction d, std::uint64_t bytes, std::uint64_t block) {
  point_spec p{"host", 0, r, d, "pageable", bytes};
  p.block_bytes = block;
  return p;
}

std::vector<backend_entry> host_entry() {
  std::vector<backend_entry> e;
  e.push_back({"host", std::make_unique<host::host_backend>(1, mem::kind_options{}), ""});
  return e;
}

selection block_selection(std::vector<std::uint64_t> totals, std::vector<std::uint64_t> blocks) {
  selection s;
  s.backends = {"host"};
  s.host_memory = {"pageable"};
  s.sizes = std::move(totals);
  s.block_sizes = std::move(blocks);
  return s;
}

}  // namespace

TEST(BlockRoutes, APlainSweepHasNoneAndABlockSweepOnlyThem) {
  host::host_backend b(1, {});
  sweep_spec plain;
  plain.sizes = {4096};
  for (const auto& p : expand(b, plain)) EXPECT_EQ(p.block_bytes, 0u) << p.route;

  sweep_spec blocks;
  blocks.sizes = {1 << 20};
  blocks.block_sizes = {4096, 65536};
  blocks.host_memory = {"pageable"};
  blocks.directions = {direction::h2d};
  const auto points = expand(b, blocks);
  std::multiset<std::string> routes;
  for (const auto& p : points) {
    EXPECT_TRUE(std::string(to_string(p.route)).starts_with("blocks-")) << p.route;
    routes.insert(to_string(p.route));
  }
  // loop, batch, pack and the choice at each block size; the kernel way never
  // meets pageable memory; the contiguous copy once, as one block of the whole.
  EXPECT_EQ(routes.count("blocks-loop"), 2u);
  EXPECT_EQ(routes.count("blocks-auto"), 2u);
  EXPECT_EQ(routes.count("blocks-kernel"), 0u);
  ASSERT_EQ(routes.count("blocks-contiguous"), 1u);
  const auto whole = std::find_if(points.begin(), points.end(),
                                  [](const point_spec& p) { return p.route == block_routes::contiguous; });
  EXPECT_EQ(whole->block_bytes, 1u << 20);

  sweep_spec named = plain;
  named.routes = {"blocks-loop"};
  EXPECT_THROW(expand(b, named), usage_error);  // a block route needs --blocks
}

TEST(BlockRoutes, EveryWayMovesEveryBlockAndCoreChecksThem) {
  no_choice_cache cache;
  host::host_backend b(1, {});
  for (route_kind r : {block_routes::loop, block_routes::batch, block_routes::pack, block_routes::choice,
                       block_routes::contiguous})
    for (direction d : {direction::h2d, direction::d2h})
      for (std::uint64_t block : {std::uint64_t{4096}, std::uint64_t{12288}}) {
        SCOPED_TRACE(::testing::Message() << r << " " << to_string(d) << " " << block);
        const std::uint64_t bytes = 48 * block;
        auto t = b.prepare(block_point(r, d, bytes, r == block_routes::contiguous ? bytes : block));
        EXPECT_NO_THROW(t->verify());
        t->poison_sample();
        EXPECT_GT(t->run(2).seconds, 0);
        EXPECT_NO_THROW(t->check_sample());
        EXPECT_EQ(t->bytes_per_rep(), bytes);
        // One wrong byte in the last destination block (list order) fails.
        t->poison_sample();
        t->run(1);
        ASSERT_TRUE(corrupt_place_for_testing(*t, 0, bytes - 1));
        EXPECT_THROW(t->check_sample(), verification_error);
      }
}

TEST(BlockRoutes, ACopyThatDidNotRunFailsTheCheck) {
  host::host_backend b(1, {});
  auto t = b.prepare(block_point(block_routes::loop, direction::d2h, 64 * 4096, 4096));
  t->poison_sample();  // and no run: the destination blocks keep the poison
  EXPECT_THROW(t->check_sample(), verification_error);
}

TEST(BlockRoutes, TheChoiceIsNamedInTheNote) {
  no_choice_cache cache;
  host::host_backend b(1, {});
  {
    // Not forced: the point names the ranking of its key.
    auto t = b.prepare(block_point(block_routes::choice, direction::h2d, 32 * 8192, 8192));
    ASSERT_TRUE(t->settings_used());
    EXPECT_EQ(t->settings_used()->component, "blocks");
    EXPECT_NE(t->settings_used()->scope.find("/h2d/pageable/8192"), std::string::npos) << t->settings_used()->scope;
  }
  // A copier takes the inputs when it is made: a backend made now.
  test::scoped_inputs pack([](mem::library_inputs& in) { in.way = mem::block_way::pack; });
  host::host_backend forced(1, {});
  auto t = forced.prepare(block_point(block_routes::choice, direction::h2d, 32 * 8192, 8192));
  EXPECT_NE(t->note().find("the copier chose pack"), std::string::npos) << t->note();
  ASSERT_TRUE(t->settings_used());
  EXPECT_EQ(t->settings_used()->scope, "") << "a forced way is the process's setting";
  EXPECT_NO_THROW(t->verify());
}

// A host kind the host block step reaches as pinned and mapped: the kernel
// way's gather/scatter then runs through the sweep's transfer too.
TEST(BlockRoutes, TheKernelWayRunsOnPinnedMemoryAndSkipsPageable) {
  // The step's own staging memory (pinned as far as it is concerned),
  // handed to the transfer as a host kind of its own.
  struct pinned_here final : mem::host_resource {
    explicit pinned_here(mem::host_block_step& s) : staging(s.staging_memory()) {}
    std::string_view kind() const noexcept override { return "test-pinned"; }
    mem::properties props() const noexcept override { return staging.props(); }
    std::size_t max_alignment() const noexcept override { return staging.max_alignment(); }
    std::size_t natural_alignment() const noexcept override { return staging.natural_alignment(); }
    std::string describe() const override { return staging.describe(); }
    void* do_allocate(std::size_t n, std::size_t a) override { return staging.allocate(n, a); }
    void do_deallocate(void* p, std::size_t n, std::size_t a) override { staging.deallocate(p, n, a); }
    mem::host_resource& staging;
  };
  mem::host_block_step step;
  mem::block_copier_options no_calibration;
  no_calibration.calibrate = false;
  mem::block_copier copier(step, no_calibration);
  for (direction d : {direction::h2d, direction::d2h}) {
    point_spec p = block_point(block_routes::kernel, d, 40 * 4096, 4096);
    p.host_memory = "test-pinned";
    auto t = make_block_transfer(p, copier, std::make_unique<pinned_here>(step));
    EXPECT_NO_THROW(t->verify()) << to_string(d);
    EXPECT_NE(t->note().find("reached as pinned"), std::string::npos) << t->note();
  }
  EXPECT_THROW(make_block_transfer(block_point(block_routes::kernel, direction::h2d, 40 * 4096, 4096), copier,
                                   std::make_unique<mem::aligned_resource>(4096)),
               skip_point);
}

TEST(BlockRoutes, AListGivenMovesOnlyItsBlocks) {
  host::host_backend b(1, {});
  point_spec p = block_point(block_routes::batch, direction::h2d, 16 * 4096, 4096);
  p.block_list = std::make_shared<const std::vector<block_pair_spec>>(parse_block_pairs("0:15,7:3,15:0"));
  auto t = b.prepare(p);
  EXPECT_EQ(t->bytes_per_rep(), 3u * 4096);
  EXPECT_NO_THROW(t->verify());
  EXPECT_NE(t->note().find("the list given"), std::string::npos);
}

TEST(BlockRoutes, BadSelectionsAreOneUsageError) {
  const auto refused = [](selection s, const std::string& words) {
    auto e = host_entry();
    try {
      make_plan(e, s);
      ADD_FAILURE() << "expected a usage error naming " << words;
    } catch (const usage_error& err) {
      EXPECT_NE(std::string(err.what()).find(words), std::string::npos) << err.what();
    }
  };
  refused(block_selection({1 << 20}, {0}), "block size of 0");
  refused(block_selection({1 << 20}, {3000}), "does not divide");
  refused(block_selection({1 << 20}, {2 << 20}), "does not divide");
  auto beyond = block_selection({64 * 4096}, {4096});
  beyond.block_list = std::make_shared<const std::vector<block_pair_spec>>(parse_block_pairs("0:1,64:2"));
  refused(beyond, "source block 64 is outside");
  auto overlap = block_selection({64 * 4096}, {4096});
  overlap.block_list = std::make_shared<const std::vector<block_pair_spec>>(parse_block_pairs("0:5,1:5"));
  refused(overlap, "both write destination block 5");
  EXPECT_THROW(parse_block_pairs("0:1,2"), usage_error);
  EXPECT_THROW(parse_block_pairs("a:1"), usage_error);

  auto e = host_entry();
  const plan ok = make_plan(e, block_selection({1 << 20}, {4096, 1 << 20}));
  EXPECT_GT(ok.runnable(), 0u);
}

TEST(BlockRoutes, ThePointCarriesItsBlocksInTheResultFile) {
  point_result r;
  r.spec = block_point(block_routes::pack, direction::d2h, 1 << 20, 16384);
  const nlohmann::json j = r;
  EXPECT_EQ(j.at("block_bytes"), 16384u);
  EXPECT_EQ(j.at("blocks"), 64u);
  EXPECT_EQ(j.get<point_result>().spec.block_bytes, 16384u);
  point_result plain;
  plain.spec = {"host", 0, route_kind::memcpy, direction::h2d, "pageable", 4096};
  EXPECT_FALSE(nlohmann::json(plain).contains("block_bytes"));
}

// --together measures each point on every device at once: the same array at
// two block sizes is two points, never one group.
TEST(BlockRoutes, EveryBlockSizeIsAGroupOfItsOwnAcrossDevices) {
  std::vector<planned_point> points;
  for (int device : {0, 1})
    for (std::uint64_t block : {std::uint64_t{4096}, std::uint64_t{65536}}) {
      point_spec p = block_point(block_routes::loop, direction::h2d, 1 << 20, block);
      p.device = device;
      points.push_back({p, ""});
    }
  const auto groups = group_across_devices(points);
  ASSERT_EQ(groups.size(), 2u);
  for (const auto& g : groups) {
    ASSERT_EQ(g.size(), 2u);
    EXPECT_EQ(g[0].spec.block_bytes, g[1].spec.block_bytes);
  }
}
