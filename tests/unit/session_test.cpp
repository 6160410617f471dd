// The session: every command's outputs are checked before anything runs, its
// results reach the files, and its outcome maps to one exit code.
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <unistd.h>
#include <xfer/core/errors.hpp>
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
