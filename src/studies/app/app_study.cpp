#include "app_study.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <limits>
#include <map>
#include <set>
#include <xfer/core/errors.hpp>
#include <xfer/core/size.hpp>
#include <xfer/core/stats.hpp>
#include <xfer/core/watchdog.hpp>

namespace xfer::app_study {
namespace {

constexpr double nan = std::numeric_limits<double>::quiet_NaN();

std::string ms(double s) { return s < 0 || std::isnan(s) ? "-" : fmt::format("{:.3f} ms", s * 1e3); }
std::string delta_ms(double s) { return std::isnan(s) ? "-" : fmt::format("{:+.3f} ms", s * 1e3); }

}  // namespace

double run_result::median(vadd_phase p) const {
  const auto& v = samples[static_cast<std::size_t>(p)];
  return v.empty() ? -1.0 : summarize(v).median;
}

bottom_lines bottom(const run_result& r) {
  using enum vadd_phase;
  const auto add = [&](std::initializer_list<vadd_phase> phases, bool& any) {
    double sum = 0;
    for (auto p : phases)
      if (const double m = r.median(p); m >= 0) sum += m, any = true;
    return sum;
  };
  bool any_algorithm = false, any_program = false;
  const double algorithm = add({map, write, launch, kernel, read}, any_algorithm);
  const double program = add({init, allocate, map, write, launch, kernel, read}, any_program);
  const double cpu = r.median(cpu_vadd);
  if (!any_algorithm || cpu < 0) return {nan, nan};
  return {cpu - program, cpu - algorithm};
}

verdict judge(const run_result& r) {
  using enum vadd_phase;
  verdict v;
  if (!r.ok()) return v;
  const double saves = bottom(r).program_s;
  if (std::isnan(saves)) return v;
  // The program's time and the CPU's, repeat by repeat: a win that one repeat
  // contradicts is no verdict an immediate rerun would repeat.
  const auto& cpu = r.samples[static_cast<std::size_t>(cpu_vadd)];
  std::size_t repeats = cpu.size();
  for (auto p : {init, allocate, map, write, launch, kernel, read})
    if (const auto& s = r.samples[static_cast<std::size_t>(p)]; !s.empty()) repeats = std::min(repeats, s.size());
  std::size_t faster = 0, slower = 0;
  for (std::size_t k = 0; k < repeats; ++k) {
    double program = 0;
    for (auto p : {init, allocate, map, write, launch, kernel, read})
      if (const auto& s = r.samples[static_cast<std::size_t>(p)]; !s.empty()) program += s[k];
    faster += program < cpu[k];
    slower += program > cpu[k];
  }
  v.saves_s = saves;
  const std::string by = fmt::format("{:.3f} ms (median of {} repeats)", std::abs(saves) * 1e3, repeats);
  if (repeats > 0 && faster == repeats) {
    v.winner = "accelerator";
    v.text = fmt::format("the accelerated program beats the CPU's loop by {}", by);
  } else if (repeats > 0 && slower == repeats) {
    v.winner = "cpu";
    v.text = fmt::format("the CPU's loop beats the accelerated program by {}", by);
  } else {
    v.winner = "unclear";
    v.text = fmt::format("no winner: the accelerated program was faster in {} and slower in {} of {} repeats", faster,
                         slower, repeats);
  }
  return v;
}

namespace {

// One strategy at one size: every repeat, each one a step of its progress.
run_result measure(vadd_app& app, run_result r, std::size_t repeats, const std::atomic<bool>& stop,
                   const beat_fn& beat) {
  try {
    r.verified = true;
    for (std::size_t rep = 0; rep < repeats && !stop.load(); ++rep) {
      const vadd_times t = app.run(r.strategy, r.n);
      beat();
      r.verified = r.verified && t.verified;
      for (std::size_t p = 0; p < vadd_phase_count; ++p)
        if (t.seconds[p] >= 0) r.samples[p].push_back(t.seconds[p]);
    }
    if (!r.verified) {
      r.status = point_status::failed;
      r.reason = "the device's result differs from the CPU's";
    }
  } catch (const skip_point& e) {
    r.status = point_status::skipped;
    r.verified = false;
    r.reason = e.what();
  } catch (const std::exception& e) {
    r.status = point_status::failed;
    r.verified = false;
    r.reason = e.what();
  }
  return r;
}

}  // namespace

std::vector<run_result> run(vadd_app& app, const std::string& backend, const std::string& device,
                            const options& o, const std::atomic<bool>& stop, const progress_fn& progress,
                            study_context* watch) {
  std::vector<std::string> strategies = o.strategies;
  if (strategies.empty())
    for (const auto& k : app.strategies()) strategies.push_back(k.name);
  std::vector<run_result> out;
  const std::size_t total = o.sizes.size() * strategies.size();
  std::string stuck_at;  // the run whose thread the watchdog left inside the app's backend
  for (std::size_t n : o.sizes) {
    for (const auto& s : strategies) {
      if (progress) progress(out.size(), total, fmt::format("{} {} {} elements", backend, s, format_size(n)));
      run_result r;
      r.backend = backend;
      r.device = device;
      r.strategy = s;
      r.n = n;
      if (!stuck_at.empty()) {
        r.status = point_status::skipped;
        r.reason = still_stuck_reason(backend, stuck_at);
        out.push_back(std::move(r));
        continue;
      }
      // Four vectors of n uint32 (a, b, the device's result, the CPU's) each repeat.
      auto ran = run_watched_point<run_result>(
          watch, std::uint64_t{16} * n,
          [&app, r, repeats = o.repeats, &stop](const beat_fn& beat) { return measure(app, r, repeats, stop, beat); });
      if (ran.result) {
        r = std::move(*ran.result);
      } else {
        if (ran.reason.empty()) return out;  // a stop request left it: the completed runs stand
        // The thread is inside the backend: its later runs would meet it there.
        r.status = point_status::failed;
        r.reason = std::move(ran.reason);
        stuck_at = fmt::format("{} {} elements", s, format_size(n));
      }
      out.push_back(std::move(r));
      if (stop.load()) return out;
    }
  }
  return out;
}

std::string render_table(const std::vector<run_result>& results, std::size_t n, const std::string& baseline) {
  std::vector<const run_result*> cols;
  const run_result* base = nullptr;
  for (const auto& r : results) {
    if (r.n != n) continue;
    cols.push_back(&r);
    if (r.strategy == baseline && r.ok()) base = &r;
  }
  std::string t = fmt::format("vadd of {} uint32 elements ({} per vector), {} on {}\n\n| Phase |", format_size(n),
                              format_capacity(n * 4), cols.empty() ? "" : cols[0]->backend,
                              cols.empty() ? "" : cols[0]->device);
  std::string rule = "| --- |";
  for (const auto* c : cols) {
    t += fmt::format(" {} |", c->strategy);
    rule += " ---: |";
    if (base && c != base) {
      t += fmt::format(" Δ {} |", c->strategy);
      rule += " ---: |";
    }
  }
  t += '\n';
  t += rule;
  t += '\n';
  const auto row = [&](const std::string& label, auto value) {
    t += "| ";
    t += label;
    t += " |";
    for (const auto* c : cols) {
      const double v = c->ok() ? value(*c) : nan;
      const bool is_delta_row = label.rfind("Δ", 0) == 0;
      t += fmt::format(" {} |", !c->ok() ? "-" : is_delta_row ? delta_ms(v) : ms(v));
      if (base && c != base) {
        const double b = value(*base);
        t += fmt::format(" {} |", c->ok() && !std::isnan(v) && !std::isnan(b) && (is_delta_row || (v >= 0 && b >= 0))
                                      ? delta_ms(v - b)
                                      : "-");
      }
    }
    t += "\n";
  };
  for (std::size_t p = 0; p < vadd_phase_count; ++p)
    row(vadd_phase_labels[p], [&](const run_result& r) { return r.median(static_cast<vadd_phase>(p)); });
  // The seed's bottom lines, CPU minus accelerator: positive where the accelerator is faster.
  row("Δ accelerator → CPU (+: accelerator faster)", [](const run_result& r) { return bottom(r).program_s; });
  row("Δ accelerator → CPU (algorithm only)", [](const run_result& r) { return bottom(r).algorithm_s; });
  for (const auto* c : cols)
    if (const auto v = judge(*c); !v.winner.empty()) t += fmt::format("\n{}: {}", c->strategy, v.text);
  for (const auto* c : cols)
    if (!c->ok()) t += fmt::format("\n{}: {}: {}", c->strategy, to_string(c->status), c->reason);
  t += "\n";
  return t;
}

std::string render_crossover(const std::vector<run_result>& results) {
  std::map<std::string, std::size_t> first;
  std::set<std::string> seen, offloaded;
  std::vector<std::string> order;
  for (const auto& r : results) {
    if (!r.ok()) continue;
    if (seen.insert(r.strategy).second) order.push_back(r.strategy);
    const double a = bottom(r).algorithm_s;
    if (!std::isnan(a)) offloaded.insert(r.strategy);
    if (!std::isnan(a) && a >= 0 && !first.count(r.strategy)) first[r.strategy] = r.n;
  }
  std::string t = "Crossover (algorithm only: transfers + launch + kernel against the CPU loop):\n";
  for (const auto& s : order)
    t += !offloaded.count(s) ? fmt::format("  {}: nothing offloaded (CPU baseline only)\n", s)
         : first.count(s) ? fmt::format("  {}: the accelerator matches or beats the CPU from {} elements\n", s,
                                      format_size(first[s]))
                        : fmt::format("  {}: the CPU is faster at every size run\n", s);
  return t;
}

value to_value(const run_result& r) {
  value phases = value::object{};
  for (std::size_t p = 0; p < vadd_phase_count; ++p) {
    if (r.samples[p].empty()) continue;
    phases[vadd_phase_names[p]] = value::object{{"samples_s", r.samples[p]}, {"median_s", summarize(r.samples[p]).median}};
  }
  const auto b = bottom(r);
  const auto v = judge(r);
  // NaN (nothing offloaded) is written as null; so is the verdict's winner.
  return value::object{{"backend", r.backend},
                       {"device", r.device},
                       {"strategy", r.strategy},
                       {"elements", r.n},
                       {"bytes_per_vector", r.n * 4},
                       {"status", to_string(r.status)},
                       {"reason", r.reason},
                       {"verified", r.verified},
                       {"phases", phases},
                       // CPU minus accelerator: positive where the accelerator is faster.
                       {"accelerator_saves_s", b.program_s},
                       {"accelerator_saves_algorithm_s", b.algorithm_s},
                       {"verdict", value::object{{"winner", v.winner.empty() ? value(nullptr) : value(v.winner)},
                                                 {"text", v.text}}}};
}

vadd_study::vadd_study(options o, std::vector<target> targets) : options_(std::move(o)), targets_(std::move(targets)) {
  if (targets_.empty()) throw usage_error("no selected backend has a vadd application");
  std::vector<std::string> known;
  for (const auto& t : targets_)
    for (const auto& k : t.app->strategies())
      if (std::find(known.begin(), known.end(), k.name) == known.end()) known.push_back(k.name);
  const auto is_known = [&](const std::string& s) { return std::find(known.begin(), known.end(), s) != known.end(); };
  for (const auto& s : options_.strategies)
    if (!is_known(s)) throw usage_error(fmt::format("unknown strategy '{}' (see `xferbench list` for host memory kinds)", s));
  const bool baseline_given = !options_.baseline.empty();
  if (!baseline_given) options_.baseline = default_baseline;
  if (!is_known(options_.baseline))
    throw usage_error(fmt::format("unknown baseline '{}' (known: {})", options_.baseline, fmt::join(known, ", ")));
  const auto& chosen = options_.strategies;
  if (baseline_given && !chosen.empty() && std::find(chosen.begin(), chosen.end(), options_.baseline) == chosen.end())
    throw usage_error(fmt::format("--baseline {} is not among --strategies {}: add it to them, or compare with one of them",
                                  options_.baseline, fmt::join(chosen, ",")));
}

study_info vadd_study::info() const {
  return {.schema = schema,
          .sections = {"results"},
          .config = value::object{{"sizes", options_.sizes}, {"repeats", options_.repeats}, {"baseline", options_.baseline}},
          .fields = {}};
}

void vadd_study::run(study_context& ctx) {
  for (auto& t : targets_) {
    const auto rs = app_study::run(
        *t.app, t.backend, t.device, options_, ctx.stop(),
        [&](std::size_t done, std::size_t total, const std::string& what) { ctx.progress(done, total, what); }, &ctx);
    for (const auto& r : rs)
      ctx.report(record{.section = "results", .status = r.status, .fields = to_value(r), .text = {}});
    std::string tables;
    for (auto n : options_.sizes) tables += render_table(rs, n, options_.baseline) + "\n";
    if (options_.sizes.size() > 1) tables += render_crossover(rs) + "\n";
    ctx.say(std::move(tables));
    if (ctx.stopped()) break;
  }
}

void options::check(std::uint64_t available_bytes) const {
  if (repeats == 0 || repeats > 1000) throw usage_error(fmt::format("--repeat {} is out of range 1..1000", repeats));
  for (auto n : sizes) {
    // Four vectors (a, b, the device's result, the CPU's) live at once.
    if (available_bytes && n > available_bytes / 16)
      throw usage_error(fmt::format("{} elements need 4 buffers of {} = more than this machine's available memory ({})",
                                    format_size(n), format_capacity(n * 4), format_capacity(available_bytes)));
  }
}

}  // namespace xfer::app_study
