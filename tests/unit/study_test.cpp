// The study interface: a study's records reach its result file through the
// session's reporters (the same atomic write as a sweep's), its text reaches
// the console, and a failed record, whatever its reason says, makes the
// command exit 1.
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>
#include <unistd.h>
#include <xfer/core/reporter.hpp>
#include <xfer/core/session.hpp>
#include <xfer/core/study.hpp>

#include "recording_context.hpp"
#include "session_fixtures.hpp"

using namespace xfer;
namespace fs = std::filesystem;

namespace {

fs::path temp_dir() { return test::temp_dir("xfer-study-"); }
run_context context() { return test::test_context("fake"); }

// Reports what it is given, in order.
class scripted_study final : public study {
 public:
  explicit scripted_study(std::vector<record> records) : records_(std::move(records)) {}
  study_info info() const override {
    return {.schema = "xferbench/fake/v1",
            .sections = {"items", "never_filled"},
            .config = value::object{{"sizes", std::vector<std::uint64_t>{4096, 1ull << 63}}, {"repeats", 2}},
            .fields = value::object{{"conventions", value::object{{"gbps", "bytes / s / 1e9"}}}}};
  }
  void run(study_context& ctx) override {
    ctx.say("== the table ==");
    for (const auto& r : records_) {
      ctx.progress(0, 1, "item");
      ctx.report(r);
    }
  }

 private:
  std::vector<record> records_;
};

record item(const std::string& name, point_status s, const std::string& reason = {}) {
  return {.section = "items",
          .status = s,
          .fields = value::object{{"name", name}, {"status", to_string(s)}, {"reason", reason}},
          .text = name + " row"};
}

nlohmann::json read_json(const fs::path& p) {
  std::ifstream in(p);
  return nlohmann::json::parse(in);
}

}  // namespace

TEST(Study, RecordsReachTheResultFileThroughTheSession) {
  const auto dir = temp_dir();
  const auto file = dir / "study.json";
  scripted_study st({item("a", point_status::ok), item("b", point_status::skipped, "not here"),
                     {.section = {}, .status = point_status::ok, .fields = {}, .text = "a note"}});
  int rc = -1;
  {
    session s(context(), {.json = file.string(), .csv = "", .progress = false});
    const auto outcome = s.run(st);
    EXPECT_EQ(outcome.ok, 1u);
    EXPECT_EQ(outcome.skipped, 1u);
    EXPECT_EQ(outcome.failed, 0u);
    EXPECT_FALSE(fs::exists(file)) << "nothing on disk before finish";
    rc = s.finish(outcome);
  }
  EXPECT_EQ(rc, exit_ok);
  const auto doc = read_json(file);
  EXPECT_EQ(doc["schema"], "xferbench/fake/v1");
  EXPECT_EQ(doc["tool"]["version"], "test");
  EXPECT_EQ(doc["started_at"], "2026-01-01T00:00:00Z");
  EXPECT_TRUE(doc.contains("system"));
  EXPECT_EQ(doc["config"]["argv"][1], "fake") << "the command line stays";
  EXPECT_EQ(doc["config"]["sizes"][1].get<std::uint64_t>(), 1ull << 63) << "the study's config joins it, exactly";
  EXPECT_EQ(doc["config"]["repeats"], 2);
  EXPECT_EQ(doc["conventions"]["gbps"], "bytes / s / 1e9");
  EXPECT_FALSE(doc.contains("results")) << "a study's file has its own sections, not the sweep's";
  EXPECT_EQ(doc["never_filled"], nlohmann::json::array());
  ASSERT_EQ(doc["items"].size(), 2u) << "the console-only note is not in the file";
  EXPECT_EQ(doc["items"][0]["name"], "a");
  EXPECT_EQ(doc["items"][1]["status"], "skipped");
  EXPECT_EQ(doc["items"][1]["reason"], "not here");
  EXPECT_EQ(doc["interrupted"], false);
  std::size_t files = 0;
  for ([[maybe_unused]] auto& e : fs::directory_iterator(dir)) ++files;
  EXPECT_EQ(files, 1u) << "written through the atomic path: no temporary left";
  fs::remove_all(dir);
}

// The exit code comes from the record's status, not from its words.
TEST(Study, AFailedItemMakesTheCommandExitOne) {
  const auto dir = temp_dir();
  scripted_study st({item("a", point_status::ok), item("b", point_status::failed, "the driver fell over")});
  session s(context(), {.json = (dir / "f.json").string(), .csv = "", .progress = false});
  const auto outcome = s.run(st);
  EXPECT_EQ(outcome.failed, 1u);
  EXPECT_EQ(s.finish(outcome), exit_failure);
  EXPECT_EQ(read_json(dir / "f.json")["items"][1]["status"], "failed") << "the partial file is still written";
  fs::remove_all(dir);

  // And a reason that starts with "failed" does not make an ok item a failure.
  scripted_study fine({item("a", point_status::ok, "failed: nothing, this is just text")});
  session quiet(context(), {.json = "", .csv = "", .progress = false});
  EXPECT_EQ(quiet.finish(quiet.run(fine)), exit_ok);
}

namespace {

// Three points through study_context::watched: the second hangs (until the
// test releases it) without a beat, the others beat and finish.
class hanging_study final : public study {
 public:
  explicit hanging_study(std::shared_ptr<std::atomic<bool>> release) : release_(std::move(release)) {}
  study_info info() const override { return {.schema = "xferbench/fake/v1", .sections = {"items"}, .config = {}, .fields = {}}; }
  void run(study_context& ctx) override {
    for (const std::string name : {"a", "hangs", "c"}) {
      auto ran = ctx.watched<int>(0, [name, release = release_](const beat_fn& beat) {
        beat();
        while (name == "hangs" && !release->load()) std::this_thread::sleep_for(std::chrono::milliseconds(5));
        return 7;
      });
      ctx.report(ran.result ? item(name, point_status::ok) : item(name, point_status::failed, ran.reason));
      reasons.push_back(ran.reason);
    }
  }
  std::vector<std::string> reasons;

 private:
  std::shared_ptr<std::atomic<bool>> release_;
};

}  // namespace

// The session runs each point of a study under the watchdog: the hung one is
// failed with the watchdog's reason, the study goes on to the next, and the
// run is abandoned (finish leaves the process once the file is written).
TEST(Study, APointThatMakesNoProgressIsFailedAndTheStudyGoesOn) {
  auto release = std::make_shared<std::atomic<bool>>(false);
  hanging_study st(release);
  session s(context(), {.json = "", .csv = "", .progress = false, .verbose = false, .watchdog_s = 0.3});
  const auto outcome = s.run(st);
  *release = true;
  EXPECT_EQ(outcome.ok, 2u);
  EXPECT_EQ(outcome.failed, 1u);
  EXPECT_TRUE(outcome.abandoned);
  EXPECT_FALSE(outcome.interrupted);
  EXPECT_EQ(exit_code_of(outcome), exit_failure);
  ASSERT_EQ(st.reasons.size(), 3u);
  EXPECT_EQ(st.reasons[1].rfind("no progress for 0.", 0), 0u) << st.reasons[1];
  EXPECT_NE(st.reasons[1].find(" s, the watchdog's bound for this point (--watchdog)"), std::string::npos);
  EXPECT_EQ(st.reasons[2], "") << "the next point ran";

  // Without a session's watchdog (a library caller's context) the point runs in place.
  test::recording_context in_place;
  auto released = std::make_shared<std::atomic<bool>>(true);
  hanging_study fine(released);
  fine.run(in_place);
  ASSERT_EQ(in_place.records.size(), 3u);
  for (const auto& r : in_place.records) EXPECT_EQ(r.status, point_status::ok);
}

TEST(Study, ConsoleShowsTheStudysTextNotTheSweepsColumns) {
  std::ostringstream out;
  console_reporter c(out);
  c.report_context(context());
  c.report_study(scripted_study({}).info());
  c.report(item("a", point_status::ok));
  c.report(record{.section = "items", .status = point_status::ok, .fields = {}, .text = ""});  // no text: no line
  c.report(record{.section = {}, .status = point_status::ok, .fields = {}, .text = "total\n"});
  c.finalize(false);
  EXPECT_EQ(out.str(), "xferbench test |  (0 CPUs) |  | 2026-01-01T00:00:00Z\na row\ntotal\n");
}

TEST(Value, ConvertsToJsonExactly) {
  value v = value::object{{"b", 1}, {"a", -2}};
  v["big"] = std::numeric_limits<std::uint64_t>::max();
  v["nan"] = std::numeric_limits<double>::quiet_NaN();
  v["inf"] = std::numeric_limits<double>::infinity();
  v["list"] = std::vector<double>{0.5, 1.5};
  v["b"] = "replaced";
  v["nested"]["deeper"] = true;
  v["none"] = nullptr;
  const auto j = nlohmann::json::parse(v.dump());
  EXPECT_EQ(j["b"], "replaced");
  EXPECT_EQ(j["a"], -2);
  EXPECT_EQ(j["big"].get<std::uint64_t>(), std::numeric_limits<std::uint64_t>::max());
  EXPECT_TRUE(j["nan"].is_null()) << "JSON has no NaN";
  EXPECT_TRUE(j["inf"].is_null()) << "JSON has no infinity";
  EXPECT_EQ(j["list"], nlohmann::json({0.5, 1.5}));
  EXPECT_EQ(j["nested"]["deeper"], true);
  EXPECT_TRUE(j["none"].is_null());
  const auto& members = std::get<value::object>(v.data());
  ASSERT_EQ(members.size(), 8u);
  EXPECT_EQ(members[0].first, "b") << "keys keep the order they were added in, a replaced one its place";
  EXPECT_EQ(members[7].first, "none");
  ASSERT_NE(v.find("a"), nullptr);
  EXPECT_EQ(v.find("missing"), nullptr);
  value s = "text";
  EXPECT_THROW(s["key"], std::logic_error);
  EXPECT_THROW(s.push_back(1), std::logic_error);
  value a;
  a.push_back(1);
  a.push_back("two");
  EXPECT_EQ(a.dump(), "[1,\"two\"]");
}
