#pragma once
// Reporters in google/benchmark's shape: the run's context first, then each
// point as it completes, then finalize(). A study (core/study.hpp) reports
// report_study() after the context, then records instead of points.
#include <filesystem>
#include <iosfwd>
#include <memory>
#include <string>
#include <vector>
#include <xfer/core/output_file.hpp>
#include <xfer/core/result.hpp>
#include <xfer/core/study.hpp>

namespace xfer {

class reporter {
 public:
  virtual ~reporter() = default;
  virtual void report_context(const run_context& context) = 0;
  virtual void report(const point_result& result) = 0;
  // A study's file shape, then its records. A reporter for sweep points only
  // (CSV) ignores them; one that wraps another must pass them on.
  virtual void report_study(const study_info&) {}
  virtual void report(const record&) {}
  // interrupted: the run stopped early (a signal); the output says it is partial.
  virtual void finalize(bool interrupted) = 0;
};

// Keeps the points in memory, for code that reads them back itself (fleet
// mode's ranks, the tests) rather than writing a file.
class collecting_reporter final : public reporter {
 public:
  std::vector<point_result> points;
  void report_context(const run_context&) override {}
  void report(const point_result& r) override { points.push_back(r); }
  void finalize(bool) override {}
};

// A human table, one row per point as it completes. Repeated skips with the
// same reason for one backend/route/kind/direction collapse into one row. A
// study's records show their own text (its table), after the same first line.
// rows = false: the header and the closing count only (the summary table
// stands in for the rows).
class console_reporter final : public reporter {
 public:
  explicit console_reporter(std::ostream& out, bool rows = true);
  void report_context(const run_context& context) override;
  void report(const point_result& result) override;
  void report_study(const study_info& info) override;
  void report(const record& r) override;
  void finalize(bool interrupted) override;

 private:
  std::ostream& out_;
  bool rows_;
  std::string last_skip_key_;
  std::size_t ok_ = 0, skipped_ = 0, failed_ = 0, converged_ = 0;
  bool columns_printed_ = false;
  bool study_ = false;  // the study's text carries its own table and totals
};

// Collects points; finalize() writes the whole file through write_output (a
// regular file replaced whole, a device, FIFO or stdout written in place).
class json_reporter final : public reporter {
 public:
  explicit json_reporter(std::filesystem::path path);
  ~json_reporter() override;
  void report_context(const run_context& context) override;
  void report(const point_result& result) override;
  // The study's schema, sections and config replace the sweep's; each record
  // with a section joins that array.
  void report_study(const study_info& info) override;
  void report(const record& r) override;
  void finalize(bool interrupted) override;

 private:
  std::filesystem::path path_;
  // The document so far; its JSON type stays in reporter.cpp, out of the
  // public headers.
  struct document;
  std::unique_ptr<document> doc_;
};

class csv_reporter final : public reporter {
 public:
  explicit csv_reporter(std::filesystem::path path);
  void report_context(const run_context& context) override;
  void report(const point_result& result) override;
  void finalize(bool interrupted) override;
  static std::string header();
  static std::string row(const point_result& r);

 private:
  std::filesystem::path path_;
  std::string body_;
};

class multi_reporter final : public reporter {
 public:
  void add(std::unique_ptr<reporter> r) { reporters_.push_back(std::move(r)); }
  void report_context(const run_context& context) override;
  void report(const point_result& result) override;
  void report_study(const study_info& info) override;
  void report(const record& r) override;
  void finalize(bool interrupted) override;

 private:
  std::vector<std::unique_ptr<reporter>> reporters_;
};

}  // namespace xfer
