#include <algorithm>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <sstream>
#include <xfer/config.hpp>
#include <xfer/core/errors.hpp>
#include <xfer/core/size.hpp>
#include <xfer/cpu/cpu_report.hpp>
#include <xfer/cpu/study.hpp>

namespace xfer::cpu {
namespace {

void add_unique(std::vector<std::string>& v, const std::string& x) {
  if (std::find(v.begin(), v.end(), x) == v.end()) v.push_back(x);
}

}  // namespace

cpu_study::cpu_study(study_config config, const std::vector<std::string>& kinds,
                     const std::vector<backend_entry>& backends)
    : config_(std::move(config)) {
  add_unique(kinds_, baseline_kind);  // break-even and the WC check compare with it
  if (kinds.empty()) {
    for (const auto& k : default_kind_names()) add_unique(kinds_, k);
  } else {
    const auto known = known_kind_names(backends);
    for (const auto& k : kinds) {
      if (std::find(known.begin(), known.end(), k) == known.end())
        throw usage_error(fmt::format("unknown memory kind '{}' (known: {})", k, fmt::join(known, ", ")));
      add_unique(kinds_, k);
    }
  }
  slots_ = resolve_kinds(kinds_, backends);
}

std::vector<std::string> cpu_study::providers() const {
  std::vector<std::string> out;
  for (const auto& s : slots_)
    if (s.info.available) add_unique(out, s.info.provider);
  return out;
}

study_info cpu_study::info() const {
  std::vector<std::string> size_text, op_text, method_text;
  for (auto s : config_.sizes) size_text.push_back(format_size(s));
  for (auto o : config_.ops) op_text.emplace_back(to_string(o));
  for (auto m : config_.methods) method_text.emplace_back(to_string(m));
  return {.schema = cpu_result_schema,
          .sections = {"kinds", "write_combining", "results"},
          .config = value::object{{"kinds", kinds_},
                                  {"ops", op_text},
                                  {"methods", method_text},
                                  {"sizes", config_.sizes},
                                  {"sizes_text", size_text},
                                  {"runs", config_.runs},
                                  {"threads", config_.threads},
                                  {"min_sample_s", config_.min_sample_s},
                                  {"wc_probe_bytes", config_.wc_probe_bytes}},
          // tool_version: what cpu/v1 files had before "tool" (kept for readers of those).
          .fields = value::object{{"conventions", conventions()}, {"tool_version", XFER_VERSION}}};
}

void cpu_study::run(study_context& ctx) {
  std::ostringstream buf;
  cpu_table table(buf);
  // What the table wrote since the last call: the text of the next record.
  const auto written = [&] {
    std::string t = buf.str();
    buf.str({});
    return t;
  };
  std::vector<kind_info> infos;
  for (const auto& s : slots_) infos.push_back(s.info);
  table.header(infos);
  ctx.say(written());
  for (const auto& k : infos)
    ctx.report(record{.section = "kinds",
                      .status = k.available ? point_status::ok : point_status::skipped,
                      .fields = to_value(k),
                      .text = {}});

  study_hooks hooks;
  hooks.stop = &ctx.stop();
  hooks.watch = &ctx;
  hooks.on_progress = [&](std::size_t done, std::size_t total, const cpu_point& p) {
    ctx.progress(done, total, fmt::format("{} {} {} threads {} {}", p.kind, to_string(p.operation), to_string(p.how),
                                          p.threads, format_size(p.bytes)));
  };
  hooks.on_point = [&](const cpu_point& p) {
    table.row(p);
    ctx.report(record{.section = "results", .status = p.status, .fields = to_value(p), .text = written()});
  };
  const study_result result = run_study(config_, slots_, hooks);
  for (const auto& w : result.write_combining)
    ctx.report(record{.section = "write_combining", .status = point_status::ok, .fields = to_value(w), .text = {}});
  table.footer(result);
  ctx.say(written());
}

}  // namespace xfer::cpu
