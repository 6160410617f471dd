#pragma once
// The study's two outputs: a human table (rows as points complete) and the
// result file (schema "xferbench/cpu/v1", the transfer result contract's
// shape: system, config, and every point with its raw samples and status).
#include <iosfwd>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <xfer/core/result.hpp>
#include <xfer/cpu/cpu_study.hpp>

namespace xfer::cpu {

inline constexpr const char* cpu_result_schema = "xferbench/cpu/v1";

class cpu_table {
 public:
  explicit cpu_table(std::ostream& out) : out_(out) {}
  // The machine, the conventions, and each kind with its provider or why it is skipped.
  void header(const run_context& context, const std::vector<kind_info>& kinds);
  // One row per point. Points of a kind skipped as a whole are not repeated
  // (header() gave the reason once).
  void row(const cpu_point& p);
  // Counts, and the write-combining verdict.
  void footer(const study_result& r);

 private:
  std::ostream& out_;
  std::set<std::string> skipped_kinds_;
  bool columns_printed_ = false;
};

// "12.3" style milliseconds for the table ("-" when not measured).
std::string format_ms(double seconds);

nlohmann::json to_json(const cpu_point& p);
nlohmann::json to_json(const kind_info& k);
nlohmann::json to_json(const wc_report& w);
nlohmann::json study_to_json(const study_result& r, const run_context& context);

}  // namespace xfer::cpu
