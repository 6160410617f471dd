#include <xfer/beside/study.hpp>

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <memory>
#include <xfer/mem/blocks/block_step.hpp>
#include <xfer/mem/staged/host_step.hpp>
#include <xfer/beside/cpu_workloads.hpp>
#include <xfer/beside/measure.hpp>
#include <xfer/core/errors.hpp>
#include <xfer/core/size.hpp>
#include <sched.h>

namespace xfer::beside {

namespace {

value spread_value(const spread& s) { return value::object{{"median", s.median}, {"low", s.low}, {"high", s.high}}; }

std::string gbps(double bytes_per_s) { return fmt::format("{:.2f} GB/s", bytes_per_s * 1e-9); }

// The workload's slowdown in words: a negative one is a speed-up.
std::string slowdown_words(double slowdown) {
  return slowdown >= 0 ? fmt::format("{:.1f}% slower", 100 * slowdown) : fmt::format("{:.1f}% faster", -100 * slowdown);
}

// The CPUs this process may use: a program's own team would take them all.
unsigned usable_cpus() {
  cpu_set_t set;
  return ::sched_getaffinity(0, sizeof set, &set) == 0 ? static_cast<unsigned>(CPU_COUNT(&set)) : 1u;
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
  threads_ = o_.threads ? static_cast<unsigned>(o_.threads) : std::max(1u, usable_cpus());
}

study_info beside_study::info() const {
  return {"xferbench/beside/v1",
          {"results", "findings"},
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
                         "over the rounds"}}};
}

void beside_study::run(study_context& context) {
  const std::size_t total = o_.workloads.size() * o_.ways.size();
  std::size_t done = 0;
  context.say(fmt::format("beside: {} way(s) of copying {} x {} {} on {} beside {} workload(s) on {} thread(s), {} "
                          "round(s) of 4 x {:g} s{}",
                          o_.ways.size(), o_.blocks, format_size(o_.block_bytes), o_.direction, sides_.backend,
                          o_.workloads.size(), threads_, o_.rounds, o_.seconds,
                          sides_.backend == "host" ? " (the host steps: every copy is CPU work, \"device\" memory host memory)" : ""));
  for (const auto& wname : o_.workloads) {
    if (context.stopped()) return;
    auto work = sides_.make_workload(wname, o_, threads_);
    std::vector<std::unique_ptr<copy_side>> ways;
    std::vector<std::string> names;
    for (const auto& name : o_.ways) {
      auto w = make_way(name, shape_, *sides_.contiguous, *sides_.blocks);
      if (const std::string why = w->refusal(); !why.empty()) {
        context.report({"results", point_status::skipped,
                        value::object{{"workload", wname}, {"way", name}, {"status", "skipped"}, {"reason", why}},
                        fmt::format("  {:<8} beside {}: skipped: {}", name, wname, why)});
        continue;
      }
      ways.push_back(std::move(w));
      names.push_back(name);
    }
    if (ways.empty()) continue;

    // The job: sized once per workload from one short pass alone, the same
    // for every way, so their joint times compare. The pass also takes each
    // side's first use (a copier's calibration) out of the rounds. Watched
    // like a point: a side that hangs here fails every way of the workload.
    std::vector<activity*> sides_to_size;
    for (auto& w : ways) sides_to_size.push_back(w.get());
    activity* work_side = work.get();
    const double pass_s = o_.seconds / 4, seconds = o_.seconds;
    watched_point<job> sized;
    std::string broke;
    try {
      sized = context.watched<job>(shape_.bytes(), [sides_to_size, work_side, pass_s, seconds](const beat_fn& beat) {
        double fastest = 0;
        for (activity* w : sides_to_size) {
          fastest = std::max(fastest, rate_alone(*w, pass_s));
          beat();
        }
        return job{static_cast<std::uint64_t>(std::ceil(fastest * seconds)),
                   static_cast<std::uint64_t>(std::ceil(rate_alone(*work_side, pass_s) * seconds))};
      });
    } catch (const std::exception& e) {
      broke = e.what();
    }
    if (!sized.result) {
      const std::string why = "sizing the job (each side alone): " +
                              (!broke.empty() ? broke : sized.reason.empty() ? std::string("stopped") : sized.reason);
      for (const auto& name : names)
        context.report({"results", point_status::failed,
                        value::object{{"workload", wname}, {"way", name}, {"status", "failed"}, {"reason", why}},
                        fmt::format("  {:<8} beside {}: failed: {}", name, wname, why)});
      kept_.push_back(std::move(work));  // may still be in use on the thread left behind
      for (auto& w : ways) kept_.push_back(std::move(w));
      continue;
    }
    const job j = *sized.result;
    context.say(fmt::format("beside {}: the job is {} copies of {} (what the fastest way alone makes in {:g} s) and "
                            "{} steps of {} (its {:g} s alone)",
                            wname, j.copy_steps, format_size(shape_.bytes()), o_.seconds, j.work_steps, wname,
                            o_.seconds));

    std::vector<std::vector<round_reading>> readings(ways.size());
    std::vector<std::string> failed(ways.size());
    // A point the watchdog (or a stop request) left behind may still be
    // stepping its way and the workload on its thread: nothing beside this
    // workload runs after it, and the study keeps both (core/study.hpp: the
    // session leaves the process once the results are written).
    std::string abandoned;
    std::size_t left = ways.size();  // the way whose point was left behind, if one was
    for (long long r = 0; r < o_.rounds && abandoned.empty() && !context.stopped(); ++r) {
      for (std::size_t k = 0; k < ways.size() && abandoned.empty() && !context.stopped(); ++k) {
        const std::size_t i = (k + static_cast<std::size_t>(r)) % ways.size();  // rotated: no way always first
        if (!failed[i].empty()) continue;
        context.progress(done, total * static_cast<std::size_t>(o_.rounds),
                         fmt::format("{} beside {}, round {}", names[i], wname, r + 1));
        try {
          copy_side& way = *ways[i];
          activity& w = *work;
          const double seconds = o_.seconds;
          auto point = context.watched<round_reading>(shape_.bytes(), [&way, &w, seconds, j](const beat_fn& beat) {
            beat();
            return measure_round(way, w, seconds, j);
          });
          if (!point.result) {
            failed[i] = point.reason.empty() ? "stopped" : point.reason;
            abandoned = fmt::format("the {} way's point was left behind ({})", names[i], failed[i]);
            left = i;
            continue;
          }
          readings[i].push_back(*point.result);
        } catch (const std::exception& e) {
          failed[i] = e.what();
        }
        ++done;
      }
    }
    if (!abandoned.empty())
      for (auto& f : failed)
        if (f.empty()) f = "not measured further: " + abandoned;

    std::vector<way_summary> summaries;
    for (std::size_t i = 0; i < ways.size(); ++i) {
      value::object f{{"workload", wname},
                      {"way", names[i]},
                      {"copy_bytes", shape_.bytes()},
                      {"job_copy_steps", j.copy_steps},
                      {"job_work_steps", j.work_steps}};
      if (readings[i].empty() || i == left) {
        const std::string why = failed[i].empty() ? std::string("no round ran") : failed[i];
        f.emplace_back("status", "failed");
        f.emplace_back("reason", why);
        context.report({"results", point_status::failed, f, fmt::format("  {:<8} beside {}: failed: {}", names[i], wname, why)});
        continue;
      }
      const std::string bad = ways[i]->check();
      const pair_summary s = summarize(readings[i], ways[i]->amount_per_step(), work->amount_per_step());
      f.emplace_back("status", bad.empty() ? "ok" : "failed");
      f.emplace_back("verified", bad.empty());
      if (!bad.empty()) f.emplace_back("reason", bad);
      f.emplace_back("rounds", s.rounds);
      f.emplace_back("copy_alone", spread_value(s.copy_alone));
      f.emplace_back("copy_beside", spread_value(s.copy_beside));
      f.emplace_back("copy_share", spread_value(s.copy_share));
      f.emplace_back("work_alone", spread_value(s.work_alone));
      f.emplace_back("work_beside", spread_value(s.work_beside));
      f.emplace_back("slowdown", spread_value(s.slowdown));
      f.emplace_back("joint_s", spread_value(s.joint_s));
      if (!failed[i].empty()) f.emplace_back("note", fmt::format("{} round(s) ran; then {}", s.rounds, failed[i]));
      const std::string text =
          fmt::format("  {:<8} beside {:<11}: copy {} alone, {} beside ({:.0f}%); the workload {}; both {:.3g} s{}",
                      names[i], wname, gbps(s.copy_alone.median), gbps(s.copy_beside.median),
                      100 * s.copy_share.median, slowdown_words(s.slowdown.median), s.joint_s.median,
                      bad.empty() ? "" : "; DATA CHECK FAILED: " + bad);
      context.report({"results", bad.empty() ? point_status::ok : point_status::failed, f, text});
      if (bad.empty()) summaries.push_back({names[i], s});
    }
    if (const auto fnd = beside_finding(wname, summaries))
      context.report({"findings", point_status::ok,
                      value::object{{"workload", fnd->workload},
                                    {"fastest_alone", fnd->fastest_alone},
                                    {"first_beside", fnd->first_beside},
                                    {"sooner", fnd->sooner},
                                    {"text", fnd->text}},
                      "finding: " + fnd->text});
    if (!abandoned.empty()) {  // may still be in use on the thread left behind: kept as long as the study
      kept_.push_back(std::move(work));
      for (auto& w : ways) kept_.push_back(std::move(w));
    }
  }
}

}  // namespace xfer::beside
