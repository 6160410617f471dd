#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <sstream>
#include <xfer/core/errors.hpp>
#include <xfer/core/reporter.hpp>

using namespace xfer;
namespace fs = std::filesystem;

namespace {

point_result ok_point() {
  point_result r;
  r.spec = {"host", 0, route_kind::memcpy, direction::h2d, "pageable", 4096};
  r.device_name = "cpu0";
  r.device_type = "cpu";
  r.timer = clock_kind::wall;
  r.bytes_per_rep = 4096;
  r.reps_per_sample = 10;
  r.samples_s = {2e-6, 1e-6, 3e-6};
  r.wall_samples_s = {2e-6, 1e-6, 3e-6};
  r.stats = summarize(r.samples_s);
  r.wall_stats = summarize(r.wall_samples_s);
  r.ci_rel = 0.005;
  r.converged = true;
  r.verified = true;
  r.first = {1e-3, 2e-3, 4e-6};
  return r;
}

point_result skipped_point(std::uint64_t bytes) {
  point_result r;
  r.spec = {"cuda-rt", 0, route_kind::copy_async, direction::h2d, "pinned", bytes};
  r.device_name = "gpu0";
  r.device_type = "gpu";
  r.status = point_status::skipped;
  r.reason = "no driver, really";
  return r;
}

run_context context() {
  run_context c;
  c.tool_version = "9.9.9";
  c.started_at = "2026-01-01T00:00:00Z";
  c.system.cpu_model = "Test CPU";
  c.system.logical_cpus = 4;
  c.system.os = "TestOS";
  c.config = value::object{{"argv", std::vector<std::string>{"xferbench", "sweep"}}};
  return c;
}

std::string slurp(const fs::path& p) {
  std::ifstream f(p);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

fs::path temp_dir() {
  auto d = fs::temp_directory_path() / ("xfer_reporter_test_" + std::to_string(::getpid()));
  fs::create_directories(d);
  return d;
}

}  // namespace

TEST(ConsoleReporter, ExactOutput) {
  std::ostringstream out;
  console_reporter c(out);
  c.report_context(context());
  c.report(ok_point());
  c.report(skipped_point(1));
  c.report(skipped_point(2));  // same reason, same series: collapsed
  c.finalize(false);
  EXPECT_EQ(out.str(),
            std::string("xferbench 9.9.9 | Test CPU (4 CPUs) | TestOS | 2026-01-01T00:00:00Z\n")
            + "backend    route        dir    host memory           size    median us      GB/s     ci95     n  \n"
            "host       memcpy       h2d    pageable                4K        2.000      2.05     0.5%     3  \n"
            "cuda-rt    copy-async   h2d    pinned                   1" +
                std::string(40, ' ') +  // the empty median/GB/s/ci/n columns
                "skipped: no driver, really\n"
            "points: 1 ok (1 converged to the CI target), 2 skipped, 0 failed\n");
}

TEST(ConsoleReporter, MarksUnconvergedAndInterrupted) {
  std::ostringstream out;
  console_reporter c(out);
  auto p = ok_point();
  p.converged = false;
  p.ci_rel = 0.034;
  c.report(p);
  c.finalize(true);
  EXPECT_NE(out.str().find("~3.4%"), std::string::npos) << out.str();
  EXPECT_NE(out.str().find("(interrupted: partial run)"), std::string::npos);
}

TEST(CsvReporter, HeaderAndRowsExact) {
  EXPECT_EQ(csv_reporter::row(ok_point()),
            "host,cpu0,0,memcpy,h2d,pageable,4096,ok,wall,3,2e-06,1e-06,2e-06,2.9e-06,3e-06,1e-06,2.048,2,2e-06,"
            "0.005,1,1,0.001,0.002,4e-06,,0,,,,,,,,,,\n");
  EXPECT_EQ(csv_reporter::row(skipped_point(8)),
            "cuda-rt,gpu0,0,copy-async,h2d,pinned,8,skipped,,0,,,,,,,,,,,,,,,,,,,,,,,,,,,\"no driver, really\"\n");
  // Devices at once, a peer copy and fleet mode fill their columns.
  auto agg = ok_point();
  agg.link_ceiling_gbps = 50;
  agg.above_link_limit = true;
  agg.together = point_result::concurrency{{0, 1}, true, 0};
  agg.spec.peer = 1;
  agg.peer_path = "peer";
  agg.fleet = point_result::fleet_tag{"node-a", 3, 1, "together", 2};
  const std::string row = csv_reporter::row(agg);
  EXPECT_NE(row.find(",4e-06,50,1,aggregate,0;1,1,peer,3,together,2,,,\n"), std::string::npos) << row;
  // A block point (sweep --blocks) fills its block size and count.
  auto blocks = ok_point();
  blocks.spec.bytes = 1 << 20;
  blocks.spec.block_bytes = 16384;
  EXPECT_NE(csv_reporter::row(blocks).find(",16384,64,\n"), std::string::npos) << csv_reporter::row(blocks);
  const auto d = temp_dir();
  csv_reporter r(d / "r.csv");
  r.report_context(context());
  r.report(ok_point());
  r.finalize(false);
  const std::string text = slurp(d / "r.csv");
  EXPECT_EQ(text, csv_reporter::header() + csv_reporter::row(ok_point()));
  fs::remove_all(d);
}

TEST(JsonReporter, WritesTheContractAndNoTemporaryFile) {
  const auto d = temp_dir();
  json_reporter r(d / "r.json");
  r.report_context(context());
  r.report(ok_point());
  r.report(skipped_point(8));
  EXPECT_FALSE(fs::exists(d / "r.json"));  // nothing on disk until finalize
  r.finalize(false);
  const auto doc = nlohmann::json::parse(slurp(d / "r.json"));
  EXPECT_EQ(doc["schema"], "xferbench/result/v2");
  EXPECT_EQ(doc["tool"]["version"], "9.9.9");
  EXPECT_EQ(doc["config"]["argv"][1], "sweep");
  EXPECT_EQ(doc["interrupted"], false);
  ASSERT_EQ(doc["results"].size(), 2u);
  const auto& p = doc["results"][0];
  for (const char* key : {"backend", "device", "route", "direction", "host_memory", "bytes", "status", "reason",
                          "samples_s", "median_s", "gbps", "latency_us", "timer"})
    EXPECT_TRUE(p.contains(key)) << key;
  EXPECT_DOUBLE_EQ(p["median_s"].get<double>(), 2e-6);
  EXPECT_EQ(doc["results"][1]["status"], "skipped");
  std::size_t files = 0;
  for ([[maybe_unused]] auto& e : fs::directory_iterator(d)) ++files;
  EXPECT_EQ(files, 1u);
  fs::remove_all(d);
}

TEST(JsonReporter, UnwritablePathThrowsAndLeavesNothing) {
  json_reporter r("/nonexistent-dir/r.json");
  r.report_context(context());
  EXPECT_THROW(r.finalize(false), std::runtime_error);
  EXPECT_FALSE(fs::exists("/nonexistent-dir"));
}

TEST(CheckWritable, RejectsMissingDirectoriesAndDirectories) {
  EXPECT_THROW(check_writable("/nonexistent-dir/r.json"), usage_error);
  EXPECT_THROW(check_writable(fs::temp_directory_path()), usage_error);
  const auto d = temp_dir();
  EXPECT_NO_THROW(check_writable(d / "ok.json"));
  EXPECT_FALSE(fs::exists(d / "ok.json"));
  fs::remove_all(d);
}

TEST(MultiReporter, FinalizesEveryReporterThenRethrows) {
  const auto d = temp_dir();
  multi_reporter m;
  m.add(std::make_unique<json_reporter>("/nonexistent-dir/r.json"));
  m.add(std::make_unique<csv_reporter>(d / "r.csv"));
  m.report_context(context());
  m.report(ok_point());
  EXPECT_THROW(m.finalize(false), std::runtime_error);
  EXPECT_TRUE(fs::exists(d / "r.csv"));  // the CSV was still written
  fs::remove_all(d);
}
