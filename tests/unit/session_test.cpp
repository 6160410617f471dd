// The session: every command's outputs are checked before anything runs, its
// results reach the files, and its outcome maps to one exit code.
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <unistd.h>
#include <xfer/core/errors.hpp>
#include <xfer/core/reporter.hpp>
#include <xfer/core/session.hpp>

#include "fake_backend.hpp"
#include "session_fixtures.hpp"

using namespace xfer;
namespace fs = std::filesystem;

namespace {

fs::path temp_dir() { return test::temp_dir("xfer-session-"); }
run_context context() { return test::test_context("sweep"); }

}  // namespace

TEST(ExitCode, OutcomesMapToTheDocumentedCodes) {
  EXPECT_EQ(exit_code_of({.ok = 3, .skipped = 1, .failed = 0}), exit_ok);
  EXPECT_EQ(exit_code_of({.ok = 3, .skipped = 0, .failed = 1}), exit_failure);
  // An interrupt wins over failures: 128 + SIGINT when the flag was set directly.
  EXPECT_EQ(exit_code_of({.ok = 0, .skipped = 0, .failed = 1, .interrupted = true}), 130);
}

TEST(Session, UnwritableOutputIsAUsageErrorBeforeAnythingRuns) {
  EXPECT_THROW(session(context(), {.json = "/nonexistent-dir/r.json", .csv = "", .progress = false}), usage_error);
  const auto d = temp_dir();
  EXPECT_THROW(session(context(), {.json = (d / "r").string(), .csv = (d / "." / "r").string(), .progress = false}), usage_error);
}

TEST(Session, RunsThePlanAndWritesEveryPointToTheFile) {
  std::vector<backend_entry> e;
  e.push_back({"fake", std::make_unique<test::fake_backend>(), ""});
  selection s;
  s.devices = {0};
  s.routes = {"copy-sync"};
  s.directions = {direction::h2d};
  s.sizes = {64, 128};
  const plan p = make_plan(e, s);  // pageable runs, pinned is skipped
  const auto file = temp_dir() / "session.json";
  measure_options m;
  m.max_time_s = 0.001;
  m.watchdog_s = 0;
  int rc = -1;
  {
    session run(context(), {.json = file.string(), .csv = "", .progress = false});
    const auto outcome = run.run(p, m);
    EXPECT_EQ(outcome.ok, 2u);
    EXPECT_EQ(outcome.skipped, 2u);
    rc = run.finish(outcome);
  }
  EXPECT_EQ(rc, exit_ok);
  std::ifstream in(file);
  const auto doc = nlohmann::json::parse(in);
  EXPECT_EQ(doc["schema"], result_schema);
  EXPECT_EQ(doc["config"]["argv"][1], "sweep");
  ASSERT_EQ(doc["results"].size(), 4u);
  EXPECT_EQ(doc["results"][2]["status"], "skipped");
  EXPECT_EQ(doc["results"][2]["reason"], "no driver");
  EXPECT_EQ(doc["interrupted"], false);
  fs::remove_all(file.parent_path());
}

// Devices at once: each device's point is held to its own link, the aggregate
// to the sum of theirs (issue 20's leftover: the aggregate was not checked).
TEST(Session, TheAggregateOfDevicesAtOnceIsHeldToTheSumOfTheirLinks) {
  run_context ctx = context();
  for (const char* address : {"0000:01:00.0", "0000:02:00.0"}) {
    pci_link l;
    l.address = address;
    l.theoretical_gbps = 32;
    l.ceiling_h2d_gbps = 25;
    l.ceiling_d2h_gbps = 25;
    ctx.system.accelerators.push_back(l);
  }
  auto point = [](int device, double gbps, bool aggregate) {
    point_result r;
    r.spec.backend = "fake";
    r.spec.device = aggregate ? -1 : device;
    r.spec.dir = direction::h2d;
    r.spec.host_memory = "pinned";
    r.spec.bytes = 1 << 20;
    r.bytes_per_rep = r.spec.bytes;
    r.status = point_status::ok;
    r.device_type = "gpu";
    r.device_pci = aggregate ? "" : fmt::format("0000:0{}:00.0", device + 1);
    r.stats.median = r.bytes_per_rep / (gbps * 1e9);
    r.samples_s = {r.stats.median};
    r.together = point_result::concurrency{{0, 1}, aggregate, 0};
    return r;
  };
  const auto file = temp_dir() / "together.json";
  {
    session run(ctx, {.json = file.string(), .csv = "", .progress = false});
    run.start();
    run.sink().report(point(0, 20, false));
    run.sink().report(point(1, 20, false));
    run.sink().report(point(-1, 40, true));  // within 2 x 25
    run.sink().report(point(0, 24, false));
    run.sink().report(point(1, 24, false));
    run.sink().report(point(-1, 60, true));  // above 2 x 25: did not all cross the links
    run.finish({.ok = 6});
  }
  std::ifstream in(file);
  const auto doc = nlohmann::json::parse(in);
  ASSERT_EQ(doc["results"].size(), 6u);
  EXPECT_DOUBLE_EQ(doc["results"][0]["link_ceiling_gbps"].get<double>(), 25);
  EXPECT_DOUBLE_EQ(doc["results"][2]["link_ceiling_gbps"].get<double>(), 50);
  EXPECT_FALSE(doc["results"][2]["verdict"]["above_link_limit"].get<bool>());
  EXPECT_DOUBLE_EQ(doc["results"][5]["link_ceiling_gbps"].get<double>(), 50);
  EXPECT_TRUE(doc["results"][5]["verdict"]["above_link_limit"].get<bool>());
  fs::remove_all(file.parent_path());
}
