#include <xfer/beside/study.hpp>

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <memory>
#include <optional>
#include <variant>
#include <xfer/mem/blocks/block_step.hpp>
#include <xfer/mem/staged/host_step.hpp>
#include <xfer/beside/cpu_workloads.hpp>
#include <xfer/beside/measure.hpp>
#include <xfer/core/errors.hpp>
#include <xfer/core/size.hpp>
#include <xfer/mem/os.hpp>

namespace xfer::beside {

namespace {

value spread_value(const spread& s) { return value::object{{"median", s.median}, {"low", s.low}, {"high", s.high}}; }

std::string gbps(double bytes_per_s) { return fmt::format("{:.2f} GB/s", bytes_per_s * 1e-9); }

// The workload's slowdown in words: a negative one is a speed-up.
std::string slowdown_words(double slowdown) {
  return slowdown >= 0 ? fmt::format("{:.1f}% slower", 100 * slowdown) : fmt::format("{:.1f}% faster", -100 * slowdown);
}

}  // namespace

void options::check(const std::vector<std::string>& workload_names) const {
  for (const auto& w : workloads)
    if (!std::ranges::count(workload_names, w))
      throw usage_error(fmt::format("--workloads {}: expected one of {}", w, fmt::join(workload_names, ", ")));
  for (const auto& w : ways)
    if (!std::ranges::count(way_names(), w))
      throw usage_error(fmt::format("--ways {}: expected one of {}", w, fmt::join(way_names(), ", ")));
  if (direction != "h2d" && direction != "d2h")
    throw usage_error(fmt::format("--direction {}: expected h2d or d2h", direction));
  if (block_bytes == 0) throw usage_error("--block-size 0: a block holds at least one byte");
  if (blocks == 0 || blocks > (std::size_t{1} << 24))
    throw usage_error(fmt::format("--blocks {}: expected 1 to {}", blocks, std::size_t{1} << 24));
  if (block_bytes > (std::size_t{1} << 40) / blocks)
    throw usage_error(fmt::format("--blocks {} of --block-size {}: more than 1 TiB a copy", blocks, block_bytes));
  if (work_bytes == 0) throw usage_error("--work-size 0: the memory workload reads at least one byte");
  if (threads < 0 || threads > 1024) throw usage_error(fmt::format("--threads {}: expected 0 (every CPU) to 1024", threads));
  if (!(seconds > 0 && seconds <= 60)) throw usage_error(fmt::format("--seconds {}: expected more than 0, at most 60", seconds));
  if (rounds < 1 || rounds > 1000) throw usage_error(fmt::format("--rounds {}: expected 1 to 1000", rounds));
}

sides host_sides() {
  return {"host", std::make_unique<mem::host_step>(), std::make_unique<mem::host_block_step>(), cpu_workload_names(),
          [](const std::string& name, const options& o, unsigned threads) {
            return make_cpu_workload(name, threads, o.work_bytes);
          }};
}

beside_study::beside_study(options o, sides s) : o_(std::move(o)), sides_(std::move(s)) {
  o_.check(sides_.workloads);
  if (o_.workloads.empty()) o_.workloads = sides_.workloads;
  if (o_.ways.empty()) o_.ways = way_names();
  shape_ = {o_.direction == "h2d" ? mem::staged_direction::to_device : mem::staged_direction::to_host, o_.block_bytes,
            o_.blocks};
  // 0: every CPU this process may use, as a program's own team would take them.
  threads_ = o_.threads ? static_cast<unsigned>(o_.threads) : mem::usable_cpu_count();
}

study_info beside_study::info() const {
  return {"xferbench/beside/v1",
          {"results", "findings", "choices"},
          value::object{{"backend", sides_.backend},
                        {"direction", o_.direction},
                        {"block_bytes", o_.block_bytes},
                        {"blocks", o_.blocks},
                        {"workloads", value::array(o_.workloads.begin(), o_.workloads.end())},
                        {"ways", value::array(o_.ways.begin(), o_.ways.end())},
                        {"copy_bytes", shape_.bytes()},
                        {"work_bytes", o_.work_bytes},
                        {"threads", threads_},
                        {"seconds", o_.seconds},
                        {"rounds", o_.rounds}},
          value::object{{"conventions",
                         "copy rates in bytes/s of the copy's source; workload rates in FLOP/s (cpu-compute) or "
                         "bytes read/s (cpu-memory); slowdown = the workload's rate alone / beside - 1; joint_s = "
                         "one job of both at once (the copy bytes the fastest way alone moves in `seconds`, the work "
                         "the workload alone does in `seconds`), until both are done; each a median with its range "
                         "over the rounds; a choice: the block copier's joint time (auto: policy alone, auto-beside: "
                         "beside_compute) against the best of the block ways it chooses among (loop, batch, kernel, "
                         "pack), vs_best = its joint median / the best's - 1"}}};
}

namespace {

// One way beside one workload: its side, its rounds' readings, and why it
// stopped early (empty: it ran every round).
struct way_run {
  std::string name;
  std::unique_ptr<copy_side> side;
  std::vector<round_reading> readings;
  std::string failed;
  bool left = false;  // its point was left behind: the side may still be running, its readings are not used
};

record failed_record(const std::string& workload, const std::string& way, const std::string& why, value::object f = {}) {
  f.emplace_back("workload", workload);
  f.emplace_back("way", way);
  f.emplace_back("status", "failed");
  f.emplace_back("reason", why);
  return {"results", point_status::failed, std::move(f), fmt::format("  {:<8} beside {}: failed: {}", way, workload, why)};
}

// The job, sized from one short pass of each side alone, under the watchdog
// like a point (the pass also takes each side's first use, a copier's
// calibration, out of the rounds); or why there is none.
std::variant<job, std::string> size_job(study_context& context, std::vector<way_run>& ways, activity& work,
                                        std::size_t step_bytes, double seconds) {
  std::vector<activity*> sides;
  for (auto& w : ways) sides.push_back(w.side.get());
  activity* work_side = &work;
  try {
    auto sized = context.watched<job>(step_bytes, [sides, work_side, seconds](const beat_fn& beat) {
      double fastest = 0;
      for (activity* a : sides) {
        fastest = std::max(fastest, rate_alone(*a, seconds / 4));
        beat();
      }
      return job{static_cast<std::uint64_t>(std::ceil(fastest * seconds)),
                 static_cast<std::uint64_t>(std::ceil(rate_alone(*work_side, seconds / 4) * seconds))};
    });
    if (sized.result) return *sized.result;
    return sized.reason.empty() ? std::string("stopped") : sized.reason;
  } catch (const std::exception& e) {
    return std::string(e.what());
  }
}

// The rounds, the ways in a rotated order each (no way always first). A
// point the watchdog (or a stop request) leaves behind may still be stepping
// its way and the workload on its thread: nothing beside this workload runs
// after it. Returns that, or empty.
std::string run_rounds(study_context& context, std::vector<way_run>& ways, activity& work, const job& j,
                       std::size_t step_bytes, double seconds, long long rounds, const std::string& wname,
                       std::size_t& done, std::size_t total) {
  for (long long r = 0; r < rounds && !context.stopped(); ++r) {
    for (std::size_t k = 0; k < ways.size() && !context.stopped(); ++k) {
      way_run& w = ways[(k + static_cast<std::size_t>(r)) % ways.size()];
      if (!w.failed.empty()) continue;
      context.progress(done++, total, fmt::format("{} beside {}, round {}", w.name, wname, r + 1));
      copy_side& side = *w.side;
      try {
        auto point = context.watched<round_reading>(step_bytes, [&side, &work, seconds, j](const beat_fn& beat) {
          beat();
          return measure_round(side, work, seconds, j);
        });
        if (!point.result) {
          w.failed = point.reason.empty() ? "stopped" : point.reason;
          w.left = true;
          return fmt::format("the {} way's point was left behind ({})", w.name, w.failed);
        }
        w.readings.push_back(*point.result);
      } catch (const std::exception& e) {
        w.failed = e.what();
      }
    }
  }
  return {};
}

// A way's record of "results": its summary with its data check, or why it
// has none. Returns the summary a finding may compare (ok ways only).
std::optional<way_summary> report_way(study_context& context, const std::string& wname, way_run& w, const job& j,
                                      std::size_t step_bytes, const activity& work) {
  value::object f{{"copy_bytes", step_bytes}, {"job_copy_steps", j.copy_steps}, {"job_work_steps", j.work_steps}};
  if (w.readings.empty() || w.left) {
    context.report(failed_record(wname, w.name, w.failed.empty() ? std::string("no round ran") : w.failed, std::move(f)));
    return std::nullopt;
  }
  const std::string bad = w.side->check();
  const pair_summary s = summarize(w.readings, w.side->amount_per_step(), work.amount_per_step());
  value::object r{{"workload", wname}, {"way", w.name}};
  r.insert(r.end(), f.begin(), f.end());
  r.emplace_back("status", bad.empty() ? "ok" : "failed");
  r.emplace_back("verified", bad.empty());
  if (!bad.empty()) r.emplace_back("reason", bad);
  r.emplace_back("rounds", s.rounds);
  for (const auto& [key, v] : {std::pair{"copy_alone", s.copy_alone}, {"copy_beside", s.copy_beside},
                               {"copy_share", s.copy_share}, {"work_alone", s.work_alone},
                               {"work_beside", s.work_beside}, {"slowdown", s.slowdown}, {"joint_s", s.joint_s}})
    r.emplace_back(key, spread_value(v));
  if (!w.failed.empty()) r.emplace_back("note", fmt::format("{} round(s) ran; then {}", s.rounds, w.failed));
  if (const std::string chose = w.side->chose(); !chose.empty()) r.emplace_back("chose", chose);
  context.report({"results", bad.empty() ? point_status::ok : point_status::failed, std::move(r),
                  fmt::format("  {:<8} beside {:<11}: copy {} alone, {} beside ({:.0f}%); the workload {}; both {:.3g} s{}",
                              w.name, wname, gbps(s.copy_alone.median), gbps(s.copy_beside.median),
                              100 * s.copy_share.median, slowdown_words(s.slowdown.median), s.joint_s.median,
                              bad.empty() ? "" : "; DATA CHECK FAILED: " + bad)});
  if (!bad.empty()) return std::nullopt;
  return way_summary{w.name, s};
}

}  // namespace

void beside_study::run(study_context& context) {
  const std::size_t total = o_.workloads.size() * o_.ways.size() * static_cast<std::size_t>(o_.rounds);
  std::size_t done = 0;
  context.say(fmt::format("beside: {} way(s) of copying {} x {} {} on {} beside {} workload(s) on {} thread(s), {} "
                          "round(s) of 4 x {:g} s{}",
                          o_.ways.size(), o_.blocks, format_size(o_.block_bytes), o_.direction, sides_.backend,
                          o_.workloads.size(), threads_, o_.rounds, o_.seconds,
                          sides_.backend == "host" ? " (the host steps: every copy is CPU work, \"device\" memory host memory)" : ""));
  for (const auto& wname : o_.workloads) {
    if (context.stopped()) return;
    auto work = sides_.make_workload(wname, o_, threads_);
    std::vector<way_run> ways;
    for (const auto& name : o_.ways) {
      try {
        auto side = make_way(name, shape_, *sides_.contiguous, *sides_.blocks);
        if (const std::string why = side->refusal(); !why.empty())
          context.report({"results", point_status::skipped,
                          value::object{{"workload", wname}, {"way", name}, {"status", "skipped"}, {"reason", why}},
                          fmt::format("  {:<8} beside {}: skipped: {}", name, wname, why)});
        else
          ways.push_back({name, std::move(side), {}, {}, false});
      } catch (const std::exception& e) {  // its memory could not be made
        context.report(failed_record(wname, name, e.what()));
      }
    }
    if (ways.empty()) continue;

    const auto sized = size_job(context, ways, *work, shape_.bytes(), o_.seconds);
    std::string abandoned;
    if (const auto* why = std::get_if<std::string>(&sized)) {
      for (const auto& w : ways) context.report(failed_record(wname, w.name, "sizing the job (each side alone): " + *why));
      abandoned = *why;
    } else {
      const job j = std::get<job>(sized);
      context.say(fmt::format("beside {}: the job is {} copies of {} (what the fastest way alone makes in {:g} s) and "
                              "{} steps of {} (its {:g} s alone)",
                              wname, j.copy_steps, format_size(shape_.bytes()), o_.seconds, j.work_steps, wname,
                              o_.seconds));
      abandoned = run_rounds(context, ways, *work, j, shape_.bytes(), o_.seconds, o_.rounds, wname, done, total);
      std::vector<way_summary> summaries, copiers;  // the ways by themselves; the block copier's choices
      for (auto& w : ways) {
        if (!abandoned.empty() && w.failed.empty()) w.failed = "not measured further: " + abandoned;
        if (auto s = report_way(context, wname, w, j, shape_.bytes(), *work))
          (w.side->chose().empty() ? summaries : copiers).push_back(std::move(*s));
      }
      std::vector<way_summary> choosable;  // the ways a copier chooses among
      for (const auto& s : summaries)
        if (is_block_way(s.way)) choosable.push_back(s);
      for (const auto& c : copiers) {
        const auto run = std::find_if(ways.begin(), ways.end(), [&](const way_run& w) { return w.name == c.way; });
        if (const auto k = check_choice(wname, c, run->side->chose(), choosable))
          context.report({"choices", point_status::ok,
                          value::object{{"workload", k->workload},
                                        {"copier", k->copier},
                                        {"chose", k->chose},
                                        {"joint_s", k->joint_s},
                                        {"best_way", k->best_way},
                                        {"best_joint_s", k->best_joint_s},
                                        {"vs_best", k->vs_best}},
                          fmt::format("  {:<11} beside {}: chose {}, both done in {:.3g} s, {:+.1f}% against {}, the "
                                      "best way ({:.3g} s)",
                                      k->copier, wname, k->chose, k->joint_s, 100 * k->vs_best, k->best_way,
                                      k->best_joint_s)});
      }
      if (const auto fnd = beside_finding(wname, summaries))
        context.report({"findings", point_status::ok,
                        value::object{{"workload", fnd->workload},
                                      {"fastest_alone", fnd->fastest_alone},
                                      {"first_beside", fnd->first_beside},
                                      {"sooner", fnd->sooner},
                                      {"text", fnd->text}},
                        "finding: " + fnd->text});
    }
    if (!abandoned.empty()) {  // the sides may still be in use on the thread left behind: kept as long as the study
      kept_.push_back(std::move(work));
      for (auto& w : ways) kept_.push_back(std::move(w.side));
    }
  }
}

}  // namespace xfer::beside
