#include "options.hpp"

#include <fmt/format.h>
#include <xfer/core/errors.hpp>
#include <xfer/core/size.hpp>
#include <xfer/mem/numbers.hpp>

namespace xfer::cli {

// CLI11 puts the option's name before the message.
CLI::Validator number_in(double lo, double hi, bool lo_open, bool hi_open, const char* range) {
  return CLI::Validator(
      [=](std::string& s) { return mem::real_problem(s, {lo, hi, lo_open, hi_open, range}); }, "", "");
}

CLI::Validator not_empty() {
  return CLI::Validator([](std::string& v) { return v.empty() ? std::string("the value is empty") : std::string(); },
                        "", "not empty");
}

CLI::Validator not_negative() {
  return CLI::Validator(
      [](std::string& v) {
        return !v.empty() && v.front() == '-' ? fmt::format("{} is negative: give a count", v) : std::string();
      },
      "", "");
}

namespace {
template <class Parse>
CLI::Validator size_check(Parse parse) {
  return CLI::Validator(
      [parse](std::string& v) {
        try {
          parse(v);
        } catch (const usage_error& e) {
          return std::string(e.what());
        }
        return std::string();
      },
      "", "");
}
}  // namespace

CLI::Validator size_value() {
  return size_check([](const std::string& v) { parse_size(v); });
}

CLI::Validator size_list() {
  return size_check([](const std::string& v) { parse_size_list(v); });
}

measure_options measure_from(const measure_args& a, measure_options base) {
  base.target_ci = a.target_ci.value_or(base.target_ci);
  base.max_time_s = a.max_time.value_or(base.max_time_s);
  base.warmup_s = a.warmup.value_or(base.warmup_s);
  base.watchdog_s = a.watchdog;
  base.verify = !a.no_verify;
  base.affinity = !a.no_affinity;
  return base;
}

void add_target_ci_option(CLI::App& cmd, std::optional<double>& v) {
  cmd.add_option("--target-ci", v,
                 fmt::format("stop sampling when the median's 95% CI is within this fraction (default: {})",
                             measure_options{}.target_ci))
      ->check(number_in(0, 1, true, true, "(0, 1): give a fraction (0.01 = 1%)"))
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
}

void add_max_time_option(CLI::App& cmd, std::optional<double>& v, double default_s, const std::string& more) {
  cmd.add_option("--max-time", v, fmt::format("sampling budget per point, seconds (default: {}{})", default_s, more))
      ->check(number_in(0, 3600, true, false, "(0, 3600] seconds"))
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
}

void add_warmup_option(CLI::App& cmd, std::optional<double>& v) {
  cmd.add_option("--warmup", v, fmt::format("warm-up per point, seconds (default: {})", measure_options{}.warmup_s))
      ->check(number_in(0, 60, false, false, "[0, 60] seconds"))
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
}

void add_watchdog_option(CLI::App& cmd, double& v, watchdog_for what) {
  cmd.add_option("--watchdog", v,
                 what == watchdog_for::sweep
                     ? "seconds a point may take before it is recorded as failed and its backend left behind (0: off; "
                       "default: 30 + 40 x --max-time + size / 20 MB/s)"
                     : "seconds a point may go without progress (a run or repeat done) before it is recorded as failed "
                       "and its thread left behind (0: off; default: 30 + size / 20 MB/s)")
      ->check(number_in(0, 86400, false, false, "[0, 86400] seconds (0 turns it off)"))
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
}

void add_no_verify_flag(CLI::App& cmd, bool& v) { cmd.add_flag("--no-verify", v, "skip checking the data each copy moves"); }

void add_no_affinity_flag(CLI::App& cmd, bool& v) {
  cmd.add_flag("--no-affinity", v,
               "do not run the measuring thread on the CPUs local to the device and prefer its NUMA node's memory "
               "(the default, as nvbandwidth does; each point records where it ran)");
}

void add_backends_option(CLI::App& cmd, std::vector<std::string>& v, const std::string& help) {
  cmd.add_option("-b,--backend", v, help)->delimiter(',');
}

void add_devices_option(CLI::App& cmd, std::vector<int>& v, const std::string& help) {
  cmd.add_option("--device", v, help)->delimiter(',');
}

void add_sizes_option(CLI::App& cmd, std::string& v, const std::string& help) {
  cmd.add_option("--sizes", v, help)
      ->check(not_empty())
      ->check(size_list())
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
}

void add_threads_option(CLI::App& cmd, unsigned& v) {
  cmd.add_option("--threads", v, "threads for the memcpy-mt route (0 = all CPUs)")
      ->check(number_in(0, 1024, false, false, "[0, 1024] (0 = all CPUs)"))
      ->capture_default_str()
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
}

void add_host_devices_option(CLI::App& cmd, int& n) {
  cmd.add_option("--host-devices", n,
                 "stand-in devices the host backend shows (each a share of host memory), to try --together, the peer "
                 "matrix and fleet mode without a GPU")
      ->check(CLI::Range(1, 64))
      ->capture_default_str()
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
}

void add_json_option(CLI::App& cmd, std::string& v, const std::string& what) {
  cmd.add_option("--json", v, fmt::format("write {} (- for stdout)", what))->check(not_empty());
}

void add_csv_option(CLI::App& cmd, std::string& v) {
  cmd.add_option("--csv", v, "write one CSV row per point (- for stdout)")->check(not_empty());
}

void add_quiet_flag(CLI::App& cmd, bool& v) { cmd.add_flag("-q,--quiet", v, "no progress line on stderr"); }

}  // namespace xfer::cli
