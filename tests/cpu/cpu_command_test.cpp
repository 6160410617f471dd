// `xferbench cpu` as main() will call it: options parsed by CLI11, then
// the command's runner. Bad input is a usage_error (exit 2) before anything is
// measured or written.
#include <map>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <unistd.h>
#include <nlohmann/json.hpp>
#include <xfer/core/errors.hpp>

#include "commands.hpp"

namespace {

namespace fs = std::filesystem;

class CpuCommand : public testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("xfer_cpu_cmd_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
    json_ = (dir_ / "cpu.json").string();
  }
  void TearDown() override { fs::remove_all(dir_); }

  int run(std::vector<std::string> args) {
    CLI::App app;
    const auto cpu = xfer::cli::add_cpu_command(app);
    args.insert(args.begin(), "cpu");
    std::vector<std::string> reversed(args.rbegin(), args.rend());  // CLI11 parses a reversed vector
    app.parse(reversed);
    args.insert(args.begin(), "xferbench");
    return cpu.run(args);
  }
  void expect_usage_error(std::vector<std::string> args, const std::string& mentions) {
    args.insert(args.end(), {"--json", json_});
    try {
      run(args);
      ADD_FAILURE() << "no usage_error";
    } catch (const xfer::usage_error& e) {
      EXPECT_NE(std::string(e.what()).find(mentions), std::string::npos) << e.what();
    } catch (const CLI::ParseError& e) {  // refused as parsed (a malformed size): main's exit 2 too
      EXPECT_NE(std::string(e.what()).find(mentions), std::string::npos) << e.what();
    }
    EXPECT_FALSE(fs::exists(json_)) << "nothing half-written";
  }

  fs::path dir_;
  std::string json_;
};

TEST_F(CpuCommand, BadInputIsAUsageErrorNamingTheValue) {
  expect_usage_error({"--sizes", "0"}, "0");
  expect_usage_error({"--sizes", "1M,-4"}, "-4");
  expect_usage_error({"--sizes", "1000T"}, "larger than this machine's memory");
  expect_usage_error({"--threads", "0"}, "--threads 0");
  expect_usage_error({"--threads", "1,5000"}, "--threads 5000");
  expect_usage_error({"--threads", "-2"}, "--threads -2");
  expect_usage_error({"--runs", "0"}, "--runs 0");
  expect_usage_error({"--kinds", "pageable,bogus"}, "unknown memory kind 'bogus'");
  expect_usage_error({"--ops", "copy"}, "unknown op 'copy'");
  expect_usage_error({"--methods", "dma"}, "unknown method 'dma'");
  expect_usage_error({"--ops", "write", "--methods", "ntload"}, "ntload applies only to read");
}

TEST_F(CpuCommand, UnwritableResultFileIsCaughtBeforeMeasuring) {
  const std::string bad = (dir_ / "no" / "such" / "dir" / "r.json").string();
  EXPECT_THROW(run({"--sizes", "4K", "--runs", "1", "--json", bad}), xfer::usage_error);
  EXPECT_THROW(run({"--sizes", "4K", "--runs", "1", "--json", dir_.string()}), xfer::usage_error);
}

TEST_F(CpuCommand, SmallRunPrintsTheTableAndWritesTheResultFile) {
  testing::internal::CaptureStdout();
  const int rc = run({"--kinds", "regular,aligned,pinned-wc,uncached", "--ops", "write,read", "--methods",
                      "memcpy,nontemporal,ntload", "--sizes", "64K", "--runs", "3", "--threads", "1,2", "--json",
                      json_, "--quiet"});
  const std::string out = testing::internal::GetCapturedStdout();
  EXPECT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("write combining"), std::string::npos) << out;
  EXPECT_NE(out.find("uncached   skipped"), std::string::npos) << out;
  EXPECT_NE(out.find("break-even"), std::string::npos) << out;

  std::ifstream f(json_);
  ASSERT_TRUE(f) << "result file written";
  const auto j = nlohmann::json::parse(f);
  EXPECT_EQ(j["schema"], "xferbench/cpu/v2");
  EXPECT_EQ(j["config"]["argv"][1], "cpu");
  EXPECT_EQ(j["config"]["kinds"][0], "pageable") << "regular is pageable";
  std::map<std::string, std::size_t> ok;
  for (const auto& p : j["results"]) {
    if (p["status"] == "ok") ++ok[p["host_memory"].get<std::string>()];
    EXPECT_NE(p["status"], "failed") << p.dump();
  }
  // Each kind that ran: (write 2 methods + read 3) x 2 threads x 1 size.
  EXPECT_EQ(ok["pageable"], 5u * 2);
  EXPECT_EQ(ok["aligned"], 5u * 2);
  // pinned-wc exists only where a GPU API offers it: all its rows ran, or none.
  EXPECT_TRUE(ok["pinned-wc"] == 0 || ok["pinned-wc"] == 5u * 2) << ok["pinned-wc"];
  EXPECT_EQ(ok.count("uncached"), 0u) << "uncached memory is skipped here";
}

}  // namespace
