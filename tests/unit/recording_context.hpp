#pragma once
// A study_context that keeps what a study reports, for tests that run a study
// without a session: its records, their console text, and each section as
// the result file would hold it.
#include <algorithm>
#include <atomic>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>
#include <xfer/core/study.hpp>

namespace xfer::test {

struct recording_context final : study_context {
  std::vector<record> records;
  std::string text;  // every record's console text, in order
  std::atomic<bool> stop_flag{false};
  std::size_t progress_calls = 0;

  void report(const record& r) override {
    records.push_back(r);
    text += r.text;
  }
  const std::atomic<bool>& stop() const override { return stop_flag; }
  void progress(std::size_t, std::size_t, const std::string&) override { ++progress_calls; }
  // Watched points (by the order they come in, from 0) this context leaves
  // behind unrun, as the watchdog leaves a hung one: with `left_reason`, or
  // as a stop request does where it is empty.
  std::vector<std::size_t> leave;
  std::string left_reason = "no progress for 1.0 s, the watchdog's bound for this point (--watchdog)";
  std::size_t watched_points = 0;

  std::optional<std::string> run_point(std::uint64_t step_bytes, std::function<void(const beat_fn&)> job) override {
    if (std::find(leave.begin(), leave.end(), watched_points++) != leave.end()) return left_reason;
    return study_context::run_point(step_bytes, std::move(job));
  }

  // The entries of one section, as JSON.
  nlohmann::json section(const std::string& name) const {
    auto out = nlohmann::json::array();
    for (const auto& r : records)
      if (r.section == name) out.push_back(nlohmann::json::parse(r.fields.dump()));
    return out;
  }
};

}  // namespace xfer::test
