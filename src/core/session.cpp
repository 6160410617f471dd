#include <optional>
#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fmt/format.h>
#include <fmt/ostream.h>
#include <functional>
#include <iostream>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <csignal>
#include <poll.h>
#include <string_view>
#include <unistd.h>
#include <xfer/core/interrupt.hpp>
#include <xfer/core/output_file.hpp>
#include <xfer/core/reporter.hpp>
#include <xfer/core/session.hpp>
#include <xfer/core/size.hpp>
#include <xfer/core/summary_reporter.hpp>
#include <xfer/core/watchdog.hpp>

namespace xfer {
namespace {

// Keeps a one-line progress display on stderr out of the way of table rows.
class progress_line final : public reporter {
 public:
  progress_line(reporter& inner, std::ostream& table) : inner_(inner), table_(table) {}
  // `left_s`: the run's own estimate of what is left (the budget's); without
  // one, the rate so far predicts the rest.
  void show(std::size_t done, std::size_t total, const point_spec& p, std::optional<double> left_s = {},
            std::string_view stage = {}) {
    show(done, total,
         fmt::format("{} {} {} {} {}", p.backend, to_string(p.route), p.host_memory, to_string(p.dir),
                     format_size(p.bytes)),
         left_s, stage);
  }
  void show(std::size_t done, std::size_t total, const std::string& what, std::optional<double> left_s = {},
            std::string_view stage = {}) {
    if (done >= total) {
      clear();
      return;
    }
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
    if (!left_s && done > 0) left_s = elapsed / static_cast<double>(done) * static_cast<double>(total - done);
    const std::string eta = left_s ? fmt::format(", ~{:.0f} s left", *left_s) : "";
    fmt::print(stderr, "\r\033[K[{}{}/{}, {:.0f} s in{}] {}", stage, done + 1, total, elapsed, eta, what);
    std::fflush(stderr);
  }
  void report_context(const run_context& c) override { inner_.report_context(c); }
  void report(const point_result& r) override {
    clear();
    inner_.report(r);
    table_.flush();
  }
  void report_study(const study_info& info) override { inner_.report_study(info); }
  void report(const record& r) override {
    clear();
    inner_.report(r);
    table_.flush();
  }
  void finalize(bool interrupted) override {
    clear();
    inner_.finalize(interrupted);
  }

 private:
  static void clear() { fmt::print(stderr, "\r\033[K"); }
  reporter& inner_;
  std::ostream& table_;
  std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
};

std::string lowercase(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// Records each point's link ceiling and flags points that beat it (the
// fastest accelerator link this machine has where the point's PCI address is
// unknown: the most generous ceiling).
class link_limit_check final : public reporter {
 public:
  link_limit_check(reporter& inner, const system_info& sys) : inner_(inner) {
    for (const auto& a : sys.accelerators) {
      if (!fastest_ || a.theoretical_gbps > fastest_->theoretical_gbps) fastest_ = &a;
      by_address_[lowercase(a.address)] = &a;
    }
  }
  void report_context(const run_context& c) override { inner_.report_context(c); }
  void report(const point_result& r) override {
    point_result flagged = r;
    if (r.together && r.together->aggregate) {
      flag_aggregate(flagged);
      return inner_.report(flagged);
    }
    const auto link = by_address_.find(lowercase(r.device_pci));
    if (link != by_address_.end() && link->second->theoretical_gbps > 0)
      flag_link_limit(flagged, *link->second);
    else if (fastest_)
      flag_link_limit(flagged, *fastest_);
    // A group's devices are reported before its aggregate: their ceilings
    // (0 where unknown or not measured) are what the aggregate is held to.
    if (r.together) group_ceilings_[{r.spec.backend, r.spec.device}] = flagged.link_ceiling_gbps;
    inner_.report(flagged);
  }
  void report_study(const study_info& info) override { inner_.report_study(info); }
  void report(const record& r) override { inner_.report(r); }
  void finalize(bool interrupted) override { inner_.finalize(interrupted); }

 private:
  // The aggregate of devices at once crosses each device's link: its ceiling
  // is their sum, where every one of them is known.
  void flag_aggregate(point_result& a) const {
    double sum = 0;
    for (int d : a.together->devices) {
      const auto c = group_ceilings_.find({a.spec.backend, d});
      if (c == group_ceilings_.end() || c->second <= 0) return;
      sum += c->second;
    }
    flag_aggregate_limit(a, sum);
  }

  reporter& inner_;
  const pci_link* fastest_ = nullptr;
  std::map<std::string, const pci_link*> by_address_;
  std::map<std::pair<std::string, int>, double> group_ceilings_;  // (backend, device) -> its last together point's
};

// The console's reader went away (`xferbench sweep | head` once head has
// its lines): measuring on would only delay the prompt, so the run stops as
// SIGPIPE would have stopped it, but with the completed points written to
// the files and the exit code a shell gives a process SIGPIPE ended (141).
// SIGPIPE itself is ignored (main): its default action would lose them.
class console_reader_check final : public reporter {
 public:
  console_reader_check(reporter& inner, std::ostream& table, int fd) : inner_(inner), table_(table), fd_(fd) {}
  void report_context(const run_context& c) override { inner_.report_context(c); }
  void report(const point_result& r) override {
    inner_.report(r);
    check();
  }
  void report_study(const study_info& info) override { inner_.report_study(info); }
  void report(const record& r) override {
    inner_.report(r);
    check();
  }
  void finalize(bool interrupted) override { inner_.finalize(interrupted); }

 private:
  void check() {
    if (stopped_ || table_.good()) return;
    // Failed writes alone could be a full disk: only a pipe with no reader
    // (poll says POLLERR on its write end) means nobody is reading.
    pollfd p{fd_, 0, 0};
    if (::poll(&p, 1, 0) == 1 && (p.revents & POLLERR)) {
      stopped_ = true;
      fmt::print(stderr, "\nxferbench: the console's reader is gone (a closed pipe): stopping; the completed points "
                         "are written\n");
      stop_as_if(SIGPIPE);
    }
  }
  reporter& inner_;
  std::ostream& table_;
  int fd_;
  bool stopped_ = false;
};

const std::atomic<bool> never_stopped{false};

}  // namespace

int exit_code_of(const sweep_outcome& o) {
  return o.interrupted ? interrupted_exit_code() : o.failed ? exit_failure : exit_ok;
}

// The reporters, innermost first: console and files, the progress line over
// them (when shown), the link check over that.
class session::chain {
 public:
  chain(const run_context& ctx, const session_options& o)
      : table_fd(writes_to_stdout(o.json) || writes_to_stdout(o.csv) ? STDERR_FILENO : STDOUT_FILENO),
        table(table_fd == STDERR_FILENO ? std::cerr : std::cout),
        show_progress(o.progress && ::isatty(STDERR_FILENO)),
        progress(out, table),
        check(show_progress ? static_cast<reporter&>(progress) : out, ctx.system),
        reader(check, table, table_fd) {
    // ctx outlives the chain (the session owns both): check keeps pointers into its links.
    // The summary first: its table closes before the console's count line.
    if (!o.verbose) out.add(std::make_unique<summary_reporter>(table, o.brief));
    out.add(std::make_unique<console_reporter>(table, o.verbose));
    if (!o.json.empty()) out.add(std::make_unique<json_reporter>(o.json));
    if (!o.csv.empty()) out.add(std::make_unique<csv_reporter>(o.csv));
  }
  int table_fd;
  std::ostream& table;
  bool show_progress;
  multi_reporter out;
  progress_line progress;
  link_limit_check check;
  console_reader_check reader;
};

session::session(run_context context, session_options options)
    : context_(std::move(context)), options_(std::move(options)) {
  check_outputs({{"--json", options_.json}, {"--csv", options_.csv}});
  chain_ = std::make_unique<chain>(context_, options_);
}

session::~session() = default;

void session::start() {
  if (started_) return;
  started_ = true;
  stop_ = &install_interrupt_flag();
  chain_->check.report_context(context_);
}

const std::atomic<bool>& session::stop() const { return stop_ ? *stop_ : never_stopped; }

reporter& session::sink() { return chain_->reader; }

std::ostream& session::console() { return chain_->table; }

sweep_outcome session::run(const plan& p, const measure_options& m, devices_mode mode) {
  start();
  for (const auto& [name, why] : p.unavailable) fmt::print(console(), "{}: unavailable: {}\n", name, why);
  for (const auto& [name, why] : p.left_out) fmt::print(console(), "{}: not run: {}\n", name, why);
  sweep_outcome all;
  // The whole run's budget spans every backend's points (measured alone; the
  // devices-at-once pass keeps its per-point time).
  std::optional<run_budget> budget;
  std::vector<unsettled_point> unsettled;  // measured once, short of the target: revisit() ends the run
  if (m.run_budget_s > 0 && mode != devices_mode::together) {
    budget.emplace(m.run_budget_s, p.runnable());
    fmt::print(console(), "budget: {:g} s for {} points (--budget), the time going to the points that need it\n",
               m.run_budget_s, p.runnable());
  }
  const std::size_t passes = mode == devices_mode::alone_then_together ? 2 : 1;
  const std::size_t total = p.size() * passes;
  std::size_t done_before = 0;
  for (const auto& b : p.backends) {
    progress_fn on_progress;
    if (chain_->show_progress)
      on_progress = [&](std::size_t done, std::size_t, const point_spec& spec) {
        if (done >= b.points.size()) return;
        std::optional<double> left;
        if (budget) left = budget->expected_left_s();
        chain_->progress.show(done_before + done, total, spec, left);
      };
    for (std::size_t pass = 0; pass < passes; ++pass) {
      // A backend abandoned in its first pass (a stuck thread) gets no second.
      if (pass > 0 && all.abandoned) break;
      const bool together = mode == devices_mode::together || pass == 1;
      const auto o = together ? run_together(*b.impl, b.points, m, sink(), stop(), on_progress)
                              : run_sweep(*b.impl, b.points, m, sink(), stop(), on_progress,
                                          budget ? &*budget : nullptr, budget ? &unsettled : nullptr);
      all.ok += o.ok;
      all.skipped += o.skipped;
      all.failed += o.failed;
      all.abandoned = all.abandoned || o.abandoned;
      if (o.abandoned) {
        // A thread is stuck inside this backend: nothing more of it is prepared; its held points stand as measured.
        std::erase_if(unsettled, [&](const unsettled_point& u) {
          if (u.impl != b.impl) return false;
          sink().report(u.first);
          return true;
        });
      }
      done_before += b.points.size();
      if (o.interrupted) {
        all.interrupted = true;
        for (const auto& u : unsettled) sink().report(u.first);  // measured: kept as they are
        return all;
      }
    }
  }
  if (budget && !unsettled.empty()) {
    // The re-measure pass counts its own points, its estimate the budget's.
    progress_fn on_again;
    if (chain_->show_progress)
      on_again = [&](std::size_t done, std::size_t n, const point_spec& spec) {
        chain_->progress.show(done, n, spec, budget->expected_left_s(), "measuring again ");
      };
    const auto again = revisit(unsettled, m, *budget, sink(), stop(), on_again);
    all.abandoned = again.abandoned || all.abandoned;
    all.ok -= again.failed;
    all.failed += again.failed;
    if (stop().load()) all.interrupted = true;
  }
  return all;
}

namespace {

// What a study reports through: the session's reporters, with each record's
// status counted for the exit code.
using show_fn = std::function<void(std::size_t done, std::size_t total, const std::string& what)>;

class study_run final : public study_context {
 public:
  study_run(reporter& sink, const std::atomic<bool>& stop, show_fn show, double watchdog_s)
      : sink_(sink), stop_(stop), show_(std::move(show)), watchdog_s_(watchdog_s) {}
  void report(const record& r) override {
    const std::lock_guard lock(m_);
    if (closed_) return;  // left behind: the results are being written without it
    if (!r.section.empty() || r.status != point_status::ok) {
      auto& n = r.status == point_status::ok ? outcome.ok : r.status == point_status::skipped ? outcome.skipped
                                                                                              : outcome.failed;
      ++n;
    }
    sink_.report(r);
  }
  const std::atomic<bool>& stop() const override { return stop_; }
  void progress(std::size_t done, std::size_t total, const std::string& what) override {
    if (show_) show_(done, total, what);
  }
  // The study's thread was left behind: what it reported so far is the
  // result, and nothing it reports later reaches the reporters.
  sweep_outcome close() {
    const std::lock_guard lock(m_);
    closed_ = true;
    return outcome;
  }
  sweep_outcome outcome;

 protected:
  // Each point on a watched thread of its own, its bound counted from its
  // latest beat; one left behind makes the run abandoned (finish leaves the
  // process: what the point's thread uses must never be destroyed).
  std::optional<std::string> run_point(std::uint64_t step_bytes, std::function<void(const beat_fn&)> job) override {
    // --watchdog 0 lifts the bound, not the thread: a stop request must still
    // end the run within the grace while a point hangs.
    const double limit = watchdog_s_ == 0  ? std::numeric_limits<double>::infinity()
                         : watchdog_s_ > 0 ? watchdog_s_
                                           : watchdog_bound(step_bytes, 0);
    auto beats = std::make_shared<heartbeat>();  // shared: the point's thread may outlive this call
    const watch_end end = watch([beats, job = std::move(job)] { job([beats] { beats->beat(); }); }, limit, stop_,
                                beats.get());
    if (end.finished) return std::nullopt;
    {
      const std::lock_guard lock(m_);
      outcome.abandoned = true;
    }
    if (end.stopped || stop_.load()) return std::string();
    return stalled_reason(end.quiet_s);
  }

 private:
  std::mutex m_;
  bool closed_ = false;
  reporter& sink_;
  const std::atomic<bool>& stop_;
  show_fn show_;
  double watchdog_s_;
};

}  // namespace

sweep_outcome session::run(study& st) {
  start();
  sink().report_study(st.info());
  show_fn show;
  if (chain_->show_progress)
    show = [this](std::size_t done, std::size_t total, const std::string& what) {
      chain_->progress.show(done, total, what);
    };
  // The study runs on a watched thread (core/watchdog.hpp), and each of its
  // points on one of its own under the bound (study_run::run_point), as a
  // sweep's points do: a point that hangs (a copy that never returns) is
  // failed and the study goes on, and a hang outside a point cannot keep a
  // stop request from ending the run. The study checks the stop between its
  // points; one stuck is left behind after the grace, its completed points
  // written and the process left by _Exit (finish).
  // Shared: a thread left behind still holds them.
  auto ctx = std::make_shared<study_run>(sink(), stop(), show, options_.watchdog_s);
  auto failure = std::make_shared<std::exception_ptr>();
  const watch_end end = watch(
      [ctx, failure, &st] {
        try {
          st.run(*ctx);
        } catch (...) {
          *failure = std::current_exception();
        }
      },
      std::numeric_limits<double>::infinity(), stop());
  sweep_outcome o;
  if (end.finished) {
    if (*failure) std::rethrow_exception(*failure);
    o = ctx->close();  // abandoned where one of its points was left behind
  } else {
    o = ctx->close();
    o.abandoned = true;
  }
  o.interrupted = stop().load();
  return o;
}

int session::finish(const sweep_outcome& o) {
  start();
  sink().finalize(o.interrupted);
  if (!options_.json.empty()) fmt::print(stderr, "wrote {}\n", options_.json);
  if (!options_.csv.empty()) fmt::print(stderr, "wrote {}\n", options_.csv);
  const int rc = exit_code_of(o);
  if (o.abandoned) {
    std::cout.flush();
    std::fflush(stdout);
    std::fflush(stderr);
    std::_Exit(rc);
  }
  return rc;
}

}  // namespace xfer
