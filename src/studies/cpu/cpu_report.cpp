#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <fmt/ostream.h>
#include <ostream>
#include <xfer/core/size.hpp>
#include <xfer/cpu/cpu_report.hpp>

namespace xfer::cpu {
namespace {

constexpr const char* columns = "{:>6}  {:<5}  {:<11}  {:>3}  {:<10}  {:>9}  {:>9}  {:>10}  {:>6}  {:>7}  {:>10}\n";

std::string ci_text(const cpu_point& p) {
  if (!std::isfinite(p.ci_rel)) return "-";
  return fmt::format("{:.1f}%", 100 * p.ci_rel);
}

std::string break_even_text(const cpu_point& p) {
  if (p.kind == baseline_kind) return "baseline";
  if (!p.vs_baseline) return "-";
  return fmt::format("{}{}", p.break_even_within_noise ? "~" : "", to_string(*p.vs_baseline));
}

const char* verdict_name(break_even::verdict v) {
  switch (v) {
    case break_even::verdict::immediate: return "immediate";
    case break_even::verdict::after: return "after";
    case break_even::verdict::never: return "never";
  }
  return "?";
}

value time_or_null(double s) { return s < 0 ? value(nullptr) : value(s); }

}  // namespace

std::string format_ms(double seconds) {
  if (seconds < 0) return "-";
  const double ms = seconds * 1e3;
  if (ms >= 100) return fmt::format("{:.1f}", ms);
  if (ms >= 1) return fmt::format("{:.3f}", ms);
  if (ms == 0) return "0";
  // Three significant digits in plain decimals: small sizes run in nanoseconds.
  const int decimals = std::min(9, 2 - static_cast<int>(std::floor(std::log10(ms))));
  return fmt::format("{:.{}f}", ms, decimals);
}

void cpu_table::header(const std::vector<kind_info>& kinds) {
  fmt::print(out_,
             "GB/s = bytes / median steady run (1e9 B/s), the seed's N/t. A copy (write, read) moves each byte twice\n"
             "(read + written): the 2N/t convention doubles the write/read figures; fill writes each byte once.\n"
             "first = first run on a freshly allocated buffer; break-even = reuses after which the kind's total\n"
             "(alloc + first run + n steady runs; reads also count filling the fresh buffer) drops below {}'s;\n"
             "~ marks a break-even whose steady times differ by less than their 95% CIs (noise decides it).\n",
             baseline_kind);
  fmt::print(out_, "memory kinds:\n");
  for (const auto& k : kinds) {
    if (k.available) {
      fmt::print(out_, "  {:<10} from {:<8} {}{}\n", k.name, k.provider, k.description,
                 k.props.write_combined ? " [write-combined]" : (k.props.pinned ? " [pinned]" : ""));
    } else {
      skipped_kinds_.insert(k.name);
      fmt::print(out_, "  {:<10} skipped: {}\n", k.name, k.reason);
    }
  }
}

void cpu_table::row(const cpu_point& p) {
  if (p.status == point_status::skipped && skipped_kinds_.count(p.kind)) return;
  if (!columns_printed_) {
    fmt::print(out_, "\n");
    fmt::print(out_, columns, "size", "op", "method", "thr", "kind", "alloc ms", "first ms", "steady ms", "ci95",
               "GB/s", "break-even");
    columns_printed_ = true;
  }
  const std::string size = format_size(p.bytes);
  const std::string how = fmt::format("{}", to_string(p.how));
  if (p.status != point_status::ok) {
    fmt::print(out_, "{:>6}  {:<5}  {:<11}  {:>3}  {:<10}  {}: {}\n", size, to_string(p.operation), how, p.threads,
               p.kind, p.status == point_status::failed ? "FAILED" : "skipped", p.reason);
    return;
  }
  fmt::print(out_, columns, size, to_string(p.operation), how, p.threads, p.kind, format_ms(p.alloc_s),
             format_ms(p.first_s), format_ms(p.stats.median), ci_text(p), fmt::format("{:.2f}", p.gbps()),
             break_even_text(p));
}

void cpu_table::footer(const study_result& r) {
  std::size_t ok = 0, skipped = 0, failed = 0;
  for (const auto& p : r.points)
    (p.status == point_status::ok ? ok : p.status == point_status::skipped ? skipped : failed)++;
  fmt::print(out_, "\n{} ok, {} skipped, {} failed{}\n", ok, skipped, failed,
             r.interrupted ? " (interrupted: partial results)" : "");
  if (r.write_combining.empty()) {
    if (!r.interrupted) fmt::print(out_, "write combining: not checked (no write-combined kind was selected)\n");
    return;
  }
  for (const auto& w : r.write_combining) fmt::print(out_, "{}\n", w.text);
}

value to_value(const cpu_point& p) {
  value j = value::object{{"backend", p.provider},
                          {"host_memory", p.kind},
                          {"op", to_string(p.operation)},
                          {"method", to_string(p.how)},
                          {"impl", p.impl},
                          {"threads", p.threads},
                          {"bytes", p.bytes},
                          {"status", to_string(p.status)},
                          {"reason", p.reason},
                          {"timer", "wall"}};
  if (p.status != point_status::ok) return j;
  const bool copy = p.operation != op::fill;
  j["alloc_s"] = time_or_null(p.alloc_s);
  j["touch_s"] = time_or_null(p.touch_s);
  j["first_s"] = time_or_null(p.first_s);
  j["first_use_s"] = time_or_null(p.first_use_s());
  j["first_gbps"] = p.first_gbps();
  j["reps_per_sample"] = p.reps_per_sample;
  j["samples_s"] = p.samples_s;
  j["stats"] = value::object{{"min", p.stats.min},   {"median", p.stats.median}, {"mean", p.stats.mean},
                             {"p95", p.stats.p95},   {"max", p.stats.max},       {"stddev", p.stats.stddev},
                             {"count", p.stats.count}};
  j["median_s"] = p.stats.median;
  j["ci_rel"] = p.ci_rel;  // infinite (unbounded) is written as null
  j["gbps"] = p.gbps();
  j["gbps_2x"] = copy ? value(2 * p.gbps()) : value(nullptr);
  j["latency_us"] = p.stats.median * 1e6;
  j["verified"] = p.verified;
  if (p.vs_baseline)
    j["break_even"] = value::object{{"verdict", verdict_name(p.vs_baseline->outcome)},
                                    {"reuses", p.vs_baseline->outcome == break_even::verdict::after
                                                   ? value(p.vs_baseline->reuses)
                                                   : value(nullptr)},
                                    {"against", baseline_kind},
                                    {"within_noise", p.break_even_within_noise}};
  else
    j["break_even"] = nullptr;
  return j;
}

value to_value(const kind_info& k) {
  value j = value::object{{"name", k.name},
                          {"status", k.available ? "available" : "skipped"},
                          {"provider", k.provider},
                          {"reason", k.reason},
                          {"description", k.description}};
  if (k.available)
    j["properties"] = value::object{{"pinned", k.props.pinned}, {"write_combined", k.props.write_combined}};
  return j;
}

value to_value(const wc_report& w) {
  value j = value::object{{"kind", w.kind}, {"provider", w.provider}, {"checked", w.checked}, {"text", w.text}};
  if (w.checked) {
    j["in_effect"] = w.verdict.in_effect;
    j["regular_read_gbps"] = w.regular_read_gbps;
    j["wc_read_gbps"] = w.wc_read_gbps;
    j["slowdown"] = w.verdict.slowdown;
  } else {
    j["in_effect"] = nullptr;
  }
  return j;
}

value conventions() {
  return value::object{
      {"gbps", "bytes / median_s / 1e9 (the seed's N/t)"},
      {"gbps_2x", "2 * gbps for copies (each byte read and written); null for fill"},
      {"first_use_s", "alloc_s + touch_s (reads: filling the fresh buffer) + first_s"},
      {"break_even", "reuses n after which first_use_s + n * median_s of the kind drops below the baseline's"},
      {"baseline", baseline_kind}};
}

}  // namespace xfer::cpu
