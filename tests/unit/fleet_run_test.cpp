// Fleet mode's protocol (src/fleet/run.cpp) over a transport of the test's
// own: the barriers each phase meets, and a rank that stops meeting them.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <xfer/backends/registry.hpp>
#include <xfer/core/describe.hpp>
#include <xfer/fleet/comm.hpp>
#include <xfer/fleet/run.hpp>

namespace xfer::fleet {
namespace {

// One rank that can meet itself; the barrier numbered `fail_at` (from 1) times out.
struct counting_comm final : comm {
  identity me{0, 1, 0, 1, "node"};
  int barriers = 0, finished = 0, fail_at = 0;
  std::string name() const override { return "test"; }
  const identity& who() const override { return me; }
  bool coordinated() const override { return true; }
  int max_local_size() override { return 1; }
  bool barrier(double) override { return ++barriers != fail_at; }
  std::vector<std::optional<std::string>> gather(const std::string& mine, double) override { return {mine}; }
  [[noreturn]] void abort_all(int code) override { throw std::runtime_error("abort_all " + std::to_string(code)); }
  void finish() override { ++finished; }
};

class FleetRun : public testing::Test {
 protected:
  std::filesystem::path out =
      std::filesystem::temp_directory_path() / ("xfer-fleet-run-" + std::to_string(::getpid()) + ".json");
  selection sel;
  void SetUp() override {
    sel.backends = {"host"};
    sel.size = "64K";
    sel.measure.max_time_s = 0.01;
    sel.repeat = 1;
    sel.judge = {3, 0.35, 0};  // the loopback host's spread (fleet_test.cpp)
    sel.json = out.string();
  }
  void TearDown() override { std::filesystem::remove(out); }
  int run_with(counting_comm& c) {
    return run(sel, c, [] { return make_backends({}); }, make_context(system_info{}, {"xferbench", "fleet"}));
  }
  nlohmann::json file() const { return nlohmann::json::parse(std::ifstream(out)); }
};

TEST_F(FleetRun, EachPhaseMeetsAtItsBarriersAndTheFileSaysHealthy) {
  counting_comm c;
  EXPECT_EQ(run_with(c), 0);
  EXPECT_EQ(c.barriers, 1 + 5);  // alone: one step per local rank; together: one per test
  EXPECT_EQ(c.finished, 1);
  const auto doc = file();
  EXPECT_EQ(doc.at("results").size(), 2u * 5u);
  EXPECT_EQ(doc.at("fleet").at("ranks").at(0).at("verdict"), "healthy");
  EXPECT_EQ(doc.at("config").at("transport"), "test");
}

TEST_F(FleetRun, WithoutTheAlonePhaseOnlyTheTogetherBarriers) {
  counting_comm c;
  sel.alone = false;
  sel.repeat = 2;
  EXPECT_EQ(run_with(c), 0);
  EXPECT_EQ(c.barriers, 5 * 2);
  EXPECT_EQ(file().at("results").size(), 5u * 2u);
}

TEST_F(FleetRun, ABarrierThatTimesOutStopsTheRankWhichIsJudgedUnhealthy) {
  counting_comm c;
  c.fail_at = 3;  // the together phase's second test
  EXPECT_EQ(run_with(c), exit_unhealthy);
  const auto rank = file().at("fleet").at("ranks").at(0);
  EXPECT_EQ(rank.at("status"), "error");
  EXPECT_NE(rank.at("reason").get<std::string>().find("did not all meet within --rank-timeout"), std::string::npos);
  EXPECT_EQ(rank.at("verdict"), "unhealthy");
  EXPECT_EQ(file().at("results").size(), 5u + 1u);  // alone whole, together up to the lost barrier
}

TEST_F(FleetRun, BadInputIsAUsageErrorBeforeAnyBarrier) {
  counting_comm c;
  sel.measure.max_time_s = max_time_ceiling_s * 2;
  EXPECT_EQ(run_with(c), 2);
  EXPECT_EQ(c.barriers, 0);
  EXPECT_EQ(c.finished, 1);
}

}  // namespace
}  // namespace xfer::fleet
