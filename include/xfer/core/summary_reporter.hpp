#pragma once
// The console's end-of-run summary: one compact table per backend and device,
// one row per route x host memory x direction, read at a glance (the rows per
// point are in the result files, and on the console with -v).
#include <iosfwd>
#include <map>
#include <string>
#include <tuple>
#include <vector>
#include <xfer/core/reporter.hpp>

namespace xfer {

class summary_reporter final : public reporter {
 public:
  // brief: one line per backend and device (each direction's peak and where
  // it is reached) instead of a row per curve.
  explicit summary_reporter(std::ostream& out, bool brief = false);
  void report_context(const run_context&) override {}
  void report(const point_result& result) override;
  void finalize(bool interrupted) override;

  // What one row says about a curve (its ok points in size order).
  struct row {
    double peak_gbps = 0;
    std::uint64_t peak_bytes = 0;
    std::uint64_t half_peak_bytes = 0;  // smallest size reaching half the peak
    double smallest_us = 0;             // time of the smallest transfer
    std::uint64_t smallest_bytes = 0;
    double pct_of_ceiling = -1;         // the peak against its link's ceiling; -1: no link
    std::size_t points = 0, converged = 0, above_limit = 0, clock_misses_work = 0, emulated = 0;
    std::string emulation;  // the mode of the emulated points
    // A latency route's curve: the range of its access times, no bandwidth.
    bool access_times = false;
    double slowest_us = 0;
  };
  // Peaks leave out points flagged above their link's ceiling.
  static row summarize_curve(const std::vector<point_result>& ok_points);

 private:
  using curve_key = std::tuple<std::string, std::string, std::string>;  // route, host memory, direction
  struct table {
    std::string title;
    std::vector<curve_key> order;
    std::map<curve_key, std::vector<point_result>> curves;
  };
  void print_table(const table& t);
  void print_brief(const table& t);
  std::ostream& out_;
  bool brief_;
  std::vector<std::string> order_;
  std::map<std::string, table> tables_;  // by backend and device
};

}  // namespace xfer
