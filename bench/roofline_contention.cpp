// The contention probe (issue 37): how fast the device's copy engine moves
// data while N CPU threads copy through memory at the same time, and how
// fast the threads copy meanwhile. A trace of the staged copier showed the
// engine at about 39 GB/s while twelve threads copied (55 alone); whether
// that is the machine or the copier is what this measures, with no copier
// in the way:
//
//   - N threads copy between a large pageable buffer (pre-faulted, each
//     thread its own slice) and a ring of `slots` chunks (the copier's
//     shape: all threads share each chunk, thread i copies piece i), with
//     memcpy as the copier's copy_piece does, looping, flat out or paced to
//     an aggregate rate (the copier in steady state copies at the link's
//     pace, not flat out);
//   - meanwhile the engine (the caller of the team, through the library's
//     device_step: the copier's own lanes) runs back-to-back copies, one
//     always queued behind the one running, either of `engine_bytes`
//     between a separate pinned buffer and device memory ("separate"), or
//     of the ring's slots themselves ("shared"): each chunk's DMA queued
//     once the threads have finished it (to the device), the threads
//     copying a chunk out once its DMA is done (to the host), and no other
//     wait (the side that is ahead never waits for a slot to be free);
//   - both rates over the same window, from one start to the engine's last
//     completion; each configuration in `windows` rounds, interleaved so a
//     drifting machine moves all of them; median and spread.
//
// The engine is timed on the host's clock across the whole window (a copy is
// always queued behind the running one, so the engine never waits for the
// host; only the last completion's wake-up, tens of microseconds of 300 ms,
// is on the clock). Without a device the threads run alone (--no-device); the
// host step stands in for a device where a test needs the engine's side to
// run (--contention-step host).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <thread>
#include <tuple>
#include <vector>
#include <fmt/format.h>
#include <xfer/core/size.hpp>
#include <xfer/mem/nontemporal.hpp>
#include <xfer/mem/spin_wait.hpp>
#include <xfer/mem/staged/host_step.hpp>
#include <xfer/mem/staged/tuning.hpp>
#include <xfer/mem/thread_team.hpp>

#include "roofline.hpp"

namespace roofline {

namespace {

using clock_type = std::chrono::steady_clock;
using xfer::mem::device_ref;
using xfer::mem::device_step;

double since(clock_type::time_point t0) { return std::chrono::duration<double>(clock_type::now() - t0).count(); }

// Page-aligned host memory: the step's pinned staging memory where there is
// a step (what a DMA reads), else plain host memory.
class host_block {
 public:
  host_block(device_step* step, std::size_t bytes) : step_(step), bytes_(bytes) {
    p_ = step ? step->staging_memory().allocate(bytes, 4096) : std::aligned_alloc(4096, (bytes + 4095) / 4096 * 4096);
    if (!p_) throw std::runtime_error(fmt::format("cannot allocate {} bytes", bytes));
  }
  ~host_block() {
    if (step_) step_->staging_memory().deallocate(p_, bytes_, 4096);
    else std::free(p_);
  }
  host_block(const host_block&) = delete;
  host_block& operator=(const host_block&) = delete;
  unsigned char* get() const noexcept { return static_cast<unsigned char*>(p_); }

 private:
  device_step* step_;
  std::size_t bytes_;
  void* p_;
};

// Polls `ready` without holding a CPU for long: a 2-CPU machine (CI) has
// the thread it waits for to run.
template <class F>
void await(F&& ready) {
  for (unsigned spins = 0; !ready(); ++spins)
    if (spins < 256) xfer::mem::cpu_relax();
    else std::this_thread::yield();
}

struct config {
  bool to_device, shared;
  unsigned threads;
  double pace_gbs;  // 0: flat out
  auto key() const { return std::tuple(to_device, shared, threads, pace_gbs); }
};

struct window {
  double engine_gbs = 0, threads_gbs = 0;
};

// One window of one configuration: the state the engine (the team's caller)
// and the copying threads share.
class probe_window {
 public:
  probe_window(const contention_options& o, const config& c, device_step* step, device_ref dev,
               unsigned char* big, unsigned char* ring, unsigned char* pinned)
      : o_(o), c_(c), step_(step), dev_(dev), big_(big), ring_(ring), pinned_(pinned),
        piece_(((o.chunk_bytes + std::max(1u, c.threads) - 1) / std::max(1u, c.threads) + 63) / 64 * 64),
        progress_(c.threads), bytes_(c.threads), ends_(c.threads) {}

  window run() {
    xfer::mem::thread_team team(c_.threads + 1);
    team.run([&](unsigned i) {
      if (i == 0) engine();
      else copier(i - 1);
    });
    if (error_) std::rethrow_exception(error_);
    window w;
    // 0, not a division by 0, where nothing completed in the window (a shared
    // ring whose threads never filled a chunk).
    if (step_ && engine_seconds_ > 0) w.engine_gbs = static_cast<double>(engine_bytes_) / engine_seconds_ / 1e9;
    if (c_.threads) {
      double bytes = 0, end = 0;
      for (unsigned i = 0; i < c_.threads; ++i) bytes += static_cast<double>(bytes_[i]), end = std::max(end, ends_[i]);
      if (end > 0) w.threads_gbs = bytes / end / 1e9;
    }
    return w;
  }

 private:
  // The chunks every thread has finished (to the device, shared ring).
  std::size_t chunks_filled() const {
    std::size_t least = static_cast<std::size_t>(-1);
    for (const auto& p : progress_) least = std::min(least, p.value.load(std::memory_order_acquire));
    return least;
  }

  void engine() {
    try {
      await([&] { return ready_.load(std::memory_order_acquire) == c_.threads; });
      t0_ = clock_type::now();
      go_.store(true, std::memory_order_release);
      if (step_) dma_loop();
      else std::this_thread::sleep_for(std::chrono::duration<double>(o_.window_s));
    } catch (...) {
      error_ = std::current_exception();
      go_.store(true, std::memory_order_release);  // a thread still waiting to start must not wait for ever
    }
    stop_.store(true, std::memory_order_release);
  }

  // Back-to-back copies: copy k queued, then copy k - 1 waited for, so one
  // is always queued behind the running one.
  void dma_loop() {
    auto lane = step_->open_lane(2);
    const bool shared = c_.shared;
    const std::size_t len = shared ? o_.chunk_bytes : o_.engine_bytes;
    std::size_t k = 0;
    auto complete = [&] {  // copy k - 1 is done
      lane->wait(static_cast<unsigned>((k - 1) % 2));
      engine_bytes_ += len;
      dmas_done_.store(k, std::memory_order_release);
      engine_seconds_ = since(t0_);
    };
    for (; since(t0_) < o_.window_s; ++k) {
      const std::size_t slot = k % o_.slots;
      unsigned char* host = shared ? ring_ + slot * o_.chunk_bytes : pinned_;
      const std::size_t at = shared ? slot * o_.chunk_bytes : 0;
      if (c_.to_device) {
        // The chunk's DMA after the threads have filled it (none: the engine alone at the chunk's size).
        if (shared && c_.threads)
          await([&] { return chunks_filled() > k || since(t0_) >= o_.window_s; });
        if (since(t0_) >= o_.window_s) break;
        lane->to_device(host, dev_, at, len);
      } else {
        lane->to_host(host, dev_, at, len);
      }
      lane->record(static_cast<unsigned>(k % 2));
      if (k >= 1) complete();
    }
    if (k >= 1) complete();
  }

  void copier(unsigned i) {
    ready_.fetch_add(1, std::memory_order_acq_rel);
    await([&] { return go_.load(std::memory_order_acquire); });
    const std::size_t lines = o_.buffer_bytes / 64 / c_.threads;
    unsigned char* slice = big_ + lines * 64 * i;
    const std::size_t slice_bytes = lines * 64;
    const std::size_t in_chunk = std::min<std::size_t>(piece_ * i, o_.chunk_bytes);
    const std::size_t len = std::min(piece_, o_.chunk_bytes - in_chunk);
    const double rate = c_.pace_gbs * 1e9 / c_.threads;  // bytes/s of this thread's share
    const bool wait_dma = c_.shared && !c_.to_device && step_;
    std::size_t pos = 0, moved = 0;
    for (std::size_t c = 0; !stop_.load(std::memory_order_acquire); ++c) {
      if (wait_dma) {  // the chunk's DMA into the ring first
        await([&] { return dmas_done_.load(std::memory_order_acquire) > c || stop_.load(std::memory_order_acquire); });
        if (stop_.load(std::memory_order_acquire)) break;
      }
      if (rate > 0)  // on schedule from the window's start: a late piece is not made up by a pause
        std::this_thread::sleep_until(t0_ + std::chrono::duration_cast<clock_type::duration>(
                                                std::chrono::duration<double>(static_cast<double>(moved) / rate)));
      if (pos + len > slice_bytes) pos = 0;
      unsigned char* slot = ring_ + (c % o_.slots) * o_.chunk_bytes + in_chunk;
      if (c_.to_device) {
        std::memcpy(slot, slice + pos, len);
        if (o_.demote) xfer::mem::demote_to_shared_cache(slot, len);  // as the copier does below the LLC's size
      } else {
        std::memcpy(slice + pos, slot, len);
      }
      pos += len;
      moved += len;
      progress_[i].value.store(c + 1, std::memory_order_release);
    }
    bytes_[i] = moved;
    ends_[i] = since(t0_);
  }

  const contention_options& o_;
  const config c_;
  device_step* step_;
  device_ref dev_;
  unsigned char *big_, *ring_, *pinned_;
  const std::size_t piece_;
  struct alignas(64) counter {  // one line each: the threads' counters must not share one
    std::atomic<std::size_t> value{0};
  };
  std::vector<counter> progress_;
  std::vector<std::size_t> bytes_;
  std::vector<double> ends_;
  std::atomic<unsigned> ready_{0};
  std::atomic<bool> go_{false}, stop_{false};
  std::atomic<std::size_t> dmas_done_{0};
  clock_type::time_point t0_;
  std::size_t engine_bytes_ = 0;
  double engine_seconds_ = 0;
  std::exception_ptr error_;
};

struct spread {
  double median = 0, min = 0, max = 0;
  std::vector<double> values;
};
spread spread_of(std::vector<double> v) {
  spread s;
  s.values = v;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  s.median = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
  s.min = v.front();
  s.max = v.back();
  return s;
}
nlohmann::json to_json(const spread& s) {
  return {{"median_gbs", s.median}, {"min_gbs", s.min}, {"max_gbs", s.max}, {"windows_gbs", s.values}};
}
std::string cell(const spread& s) { return fmt::format("{:6.2f} ({:.2f}-{:.2f})", s.median, s.min, s.max); }

std::vector<config> configs(const contention_options& o, bool engine) {
  std::vector<config> out;
  for (const bool to_device : {true, false})
    for (const bool shared : {false, true}) {
      if (shared && (!o.shared_ring || !engine)) continue;  // the shared ring needs an engine
      for (const unsigned n : o.threads) {
        if (n == 0) {
          if (engine) out.push_back({to_device, shared, 0, 0});  // the engine alone
          continue;
        }
        for (const double pace : o.paces_gbs) out.push_back({to_device, shared, n, pace});
      }
    }
  return out;
}

}  // namespace

std::vector<unsigned> default_contention_threads() {
  std::vector<unsigned> t{0, 2, 4, 8, 12};
  if (const unsigned d = xfer::mem::default_staged_threads(); std::find(t.begin(), t.end(), d) == t.end()) t.push_back(d);
  return t;
}

bool contention_option(const std::string& name, const std::function<std::string()>& value, contention_options& o) {
  auto number = [&](const std::string& s) {
    std::size_t used = 0;
    double v = 0;
    try {
      v = std::stod(s, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != s.size() || !(v >= 0)) throw std::invalid_argument(fmt::format("{}: '{}' is not a number >= 0", name, s));
    return v;
  };
  auto list = [&](const std::string& s) {
    std::vector<double> out;
    for (std::size_t at = 0; at <= s.size();) {
      const std::size_t comma = std::min(s.find(',', at), s.size());
      out.push_back(number(s.substr(at, comma - at)));
      at = comma + 1;
    }
    return out;
  };
  if (name == "--contention") o.enabled = true;
  else if (name == "--contention-only") o.enabled = o.only = true;
  else if (name == "--contention-threads") {
    o.threads.clear();
    for (const double t : list(value())) {
      if (t != static_cast<unsigned>(t)) throw std::invalid_argument(fmt::format("{}: {} is not a thread count", name, t));
      if (std::find(o.threads.begin(), o.threads.end(), static_cast<unsigned>(t)) == o.threads.end())
        o.threads.push_back(static_cast<unsigned>(t));
    }
  } else if (name == "--contention-paces") o.paces_gbs = list(value());
  else if (name == "--contention-window") o.window_s = number(value());
  else if (name == "--contention-windows") o.windows = static_cast<unsigned>(number(value()));
  else if (name == "--contention-buffer") o.buffer_bytes = xfer::parse_size(value());
  else if (name == "--contention-chunk") o.chunk_bytes = xfer::parse_size(value());
  else if (name == "--contention-slots") o.slots = static_cast<unsigned>(number(value()));
  else if (name == "--contention-engine-bytes") o.engine_bytes = xfer::parse_size(value());
  else if (name == "--contention-no-shared") o.shared_ring = false;
  else if (name == "--contention-demote") o.demote = true;
  else if (name == "--contention-step") {
    o.step = value();
    if (o.step != "gpu" && o.step != "host") throw std::invalid_argument(name + ": '" + o.step + "' is not gpu or host");
  } else return false;
  return true;
}

void contention_options::validate() const {
  auto bad = [](const std::string& why) { throw std::invalid_argument("contention probe: " + why); };
  if (window_s <= 0 || windows == 0) bad("--contention-window and --contention-windows must be above 0");
  if (threads.empty() || paces_gbs.empty()) bad("empty --contention-threads or --contention-paces");
  if (slots == 0 || chunk_bytes < 64 || engine_bytes == 0) bad("--contention-slots, -chunk and -engine-bytes must be above 0 (a chunk at least 64 bytes)");
  const unsigned most = *std::max_element(threads.begin(), threads.end());
  if (most > 0 && buffer_bytes / 64 / most * 64 < (chunk_bytes + most - 1) / most)
    bad(fmt::format("--contention-buffer {} leaves {} threads slices smaller than their piece of a {} chunk", buffer_bytes,
                    most, chunk_bytes));
}

nlohmann::json run_contention(const contention_options& o, device_step* step, const std::string& device) {
  o.validate();
  const std::size_t ring_bytes = o.chunk_bytes * o.slots;
  host_block big(nullptr, o.buffer_bytes), ring(step, ring_bytes);
  std::optional<host_block> pinned;
  device_ref dev;
  if (step) {
    pinned.emplace(step, o.engine_bytes);
    std::memset(pinned->get(), 3, o.engine_bytes);
    dev = step->allocate(std::max(o.engine_bytes, ring_bytes));
  }
  struct release {
    device_step* s;
    device_ref d;
    ~release() {
      if (s) s->deallocate(d);
    }
  } release_{step, dev};
  {  // pre-faulted, by as many threads as the machine has (the pages' first touch is not what is measured)
    const unsigned n = std::max(1u, std::thread::hardware_concurrency());
    xfer::mem::thread_team toucher(n);
    toucher.run([&](unsigned i) {
      const std::size_t lines = o.buffer_bytes / 64;
      const std::size_t lo = lines * i / n * 64, hi = i + 1 == n ? o.buffer_bytes : lines * (i + 1) / n * 64;
      std::memset(big.get() + lo, static_cast<int>(i + 1), hi - lo);
    });
    std::memset(ring.get(), 1, ring_bytes);
  }

  const auto list = configs(o, step != nullptr);
  std::map<decltype(config{}.key()), std::vector<window>> results;
  for (unsigned r = 0; r < o.windows; ++r)  // rounds: each configuration once per round
    for (const auto& c : list)
      results[c.key()].push_back(
          probe_window(o, c, step, dev, big.get(), ring.get(), pinned ? pinned->get() : nullptr).run());

  nlohmann::json out;
  out["engine"] = step ? device : "none (" + device + "): the threads alone";
  out["config"] = {{"buffer_bytes", o.buffer_bytes},      {"chunk_bytes", o.chunk_bytes},
                   {"slots", o.slots},                    {"engine_bytes", o.engine_bytes},
                   {"window_s", o.window_s},              {"windows", o.windows},
                   {"threads", o.threads},                {"paces_gbs", o.paces_gbs},
                   {"thread_copy", "memcpy (the copier's copy_piece, stream stores off)"},
                   {"demote_ring_writes", o.demote},
                   {"engine_timer", "host clock over the window, one copy always queued behind the running one"}};
  out["rows"] = nlohmann::json::array();
  std::printf("\n== contention: the copy engine (%s) while N threads copy a %s pageable buffer <-> a ring of %u x %s\n"
              "   separate: the engine's copies of %s from a pinned buffer of its own; shared: the engine moves the "
              "ring's chunks\n   (median of %u windows of %.2f s, spread min-max; pace: the threads' aggregate "
              "target)\n",
              out["engine"].get<std::string>().c_str(), xfer::format_size(o.buffer_bytes).c_str(), o.slots,
              xfer::format_size(o.chunk_bytes).c_str(), xfer::format_size(o.engine_bytes).c_str(), o.windows,
              o.window_s);
  std::printf("%-9s %4s %7s %6s %24s %9s %24s\n", "ring", "dir", "threads", "pace", "engine GB/s", "vs alone",
              "threads GB/s");
  for (const auto& c : list) {
    const auto& ws = results[c.key()];
    std::vector<double> e, t;
    for (const auto& w : ws) e.push_back(w.engine_gbs), t.push_back(w.threads_gbs);
    const spread se = spread_of(e), st = spread_of(t);
    // The engine alone: the same ring mode and direction with no thread.
    std::optional<double> alone;
    if (auto it = results.find(config{c.to_device, c.shared, 0, 0}.key()); step && it != results.end()) {
      std::vector<double> a;
      for (const auto& w : it->second) a.push_back(w.engine_gbs);
      alone = spread_of(a).median;
    }
    const std::string pace = c.threads == 0 ? "-" : c.pace_gbs > 0 ? fmt::format("{:g}", c.pace_gbs) : "flat";
    std::printf("%-9s %4s %7u %6s %24s %9s %24s\n", c.shared ? "shared" : "separate", c.to_device ? "h2d" : "d2h",
                c.threads, pace.c_str(), step ? cell(se).c_str() : "-",
                alone && *alone > 0 ? fmt::format("{:.0f}%", 100 * se.median / *alone).c_str() : "-",
                c.threads ? cell(st).c_str() : "-");
    std::fflush(stdout);
    out["rows"].push_back({{"ring", c.shared ? "shared" : "separate"},
                           {"direction", c.to_device ? "h2d" : "d2h"},
                           {"threads", c.threads},
                           {"pace_gbs", c.threads && c.pace_gbs > 0 ? nlohmann::json(c.pace_gbs) : nlohmann::json()},
                           {"engine", step ? to_json(se) : nlohmann::json()},
                           {"engine_alone_gbs", alone ? nlohmann::json(*alone) : nlohmann::json()},
                           {"threads_copy", c.threads ? to_json(st) : nlohmann::json()}});
  }
  return out;
}

nlohmann::json run_contention(const contention_options& o) {
  std::unique_ptr<device_step> step;
  std::string device;
  if (o.step == "host") {
    step = std::make_unique<xfer::mem::host_step>();
    device = "host step (a CPU thread stands in for the copy engine)";
  } else if (o.device) {
    if ((step = gpu_step(device))) device = fmt::format("{} {}", step->name(), step->device_key());
  } else {
    device = "--no-device";
  }
  return run_contention(o, step.get(), device);
}

}  // namespace roofline
