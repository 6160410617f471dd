#pragma once
// The study's two outputs: a human table (rows as points complete) and the
// entries of its result file (schema "xferbench/cpu/v2", the transfer result
// contract's shape: every point with its raw samples and status), which
// cpu_study (study.hpp) reports through the session.
#include <iosfwd>
#include <set>
#include <string>
#include <xfer/core/result.hpp>
#include <xfer/core/value.hpp>
#include <xfer/cpu/cpu_study.hpp>

namespace xfer::cpu {

inline constexpr const char* cpu_result_schema = "xferbench/cpu/v2";

class cpu_table {
 public:
  explicit cpu_table(std::ostream& out) : out_(out) {}
  // The conventions, and each kind with its provider or why it is skipped
  // (the session's first line has already named the machine).
  void header(const std::vector<kind_info>& kinds);
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

// Entries of the file's "results", "kinds" and "write_combining".
value to_value(const cpu_point& p);
value to_value(const kind_info& k);
value to_value(const wc_report& w);
// The file's "conventions": what its numbers mean.
value conventions();

}  // namespace xfer::cpu
