// Is the staged copy ever slower than the plain API from the same pageable
// buffer? Issue 15 asks for "never slower, at any size from 1 B to 1 GiB":
// below the handoff the copier calls the plain API itself, above it the
// pipeline must win. A sweep measures the two routes one after the other,
// so a machine that drifts between them decides the comparison; here each
// size interleaves the two (plain, staged, staged, plain, ...) on the same
// buffers, and the verdict comes from the ratio of each pair.
//
//   xfer_bench_staged_vs_plain [--step runtime|driver|host] [--max SIZE]
//                              [--seconds S] [--json FILE]
//   xfer_bench_staged_vs_plain --reuse [--min SIZE] [--max SIZE] [--repeats N] ...
//
// --reuse (issue 37, item 5): a reused pageable buffer through a copier
// with a registration cache, each size (powers of two from --min, default
// 16 MiB, to --max) and direction on a fresh buffer (forgotten after): the
// first copy (staged), the second (it registers the buffer), and --repeats
// later ones (default 20, from the registration), against the same buffer
// staged without the cache and the plain copy from pinned staging memory.
// Raw samples in the JSON (schema xferbench/registration-reuse/v1).
//
// --seconds is the sampling budget per size and direction (default 0.25).
// The copier's tuning is the machine's cached calibration (calibrated now
// if there is none; XFER_STAGED_* override it), printed with the time it
// took. Every size's data is checked once, both ways.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <xfer/config.hpp>
#include <xfer/core/output_file.hpp>
#include <xfer/core/size.hpp>
#include <sys/mman.h>
#include <xfer/mem/registration_cache.hpp>
#include <xfer/mem/staged/host_step.hpp>
#include <xfer/mem/staged/staged_copier.hpp>
#if XFER_HAVE_CUDA
#include <xfer/mem/cuda/staged_step.hpp>
#endif

namespace {

using clock_type = std::chrono::steady_clock;
using xfer::mem::device_ref;

double seconds(clock_type::time_point a, clock_type::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

template <class F>
double timed(F&& f) {
  const auto t0 = clock_type::now();
  f();
  return seconds(t0, clock_type::now());
}

// The q-quantile (0..1) of sorted values, by the nearest rank.
double quantile(const std::vector<double>& sorted, double q) {
  const auto i = static_cast<std::size_t>(std::clamp(q * static_cast<double>(sorted.size() - 1) + 0.5, 0.0,
                                                     static_cast<double>(sorted.size() - 1)));
  return sorted[i];
}

// The median of the pairs' ratios (staged / plain) and its distribution-free
// 95% interval: the order statistics n/2 -+ 0.98 sqrt(n), as the sweep's CI.
struct ratio_summary {
  double median = 0, low = 0, high = 0;
};
ratio_summary ratios(std::vector<double> r) {
  std::sort(r.begin(), r.end());
  const double n = static_cast<double>(r.size());
  const double half = 0.98 * std::sqrt(n);
  auto at = [&](double rank) {
    return r[static_cast<std::size_t>(std::clamp(std::round(rank), 0.0, n - 1))];
  };
  return {quantile(r, 0.5), at(n / 2 - half - 1), at(n / 2 + half)};
}

std::unique_ptr<xfer::mem::device_step> make_step(const std::string& name) {
  if (name == "host") return std::make_unique<xfer::mem::host_step>();
#if XFER_HAVE_CUDA
  if (name == "runtime") return xfer::cuda::make_staged_step(0, xfer::cuda::allocating_api::runtime);
  if (name == "driver") return xfer::cuda::make_staged_step(0, xfer::cuda::allocating_api::driver);
#endif
  throw std::invalid_argument(fmt::format("unknown or unbuilt step '{}' (runtime, driver, host)", name));
}

std::vector<std::size_t> sizes_up_to(std::size_t max) {
  // Powers of four to 16 KiB (the plain API's own range), then every power
  // of two, where the handoff and the pipeline's ramp lie.
  std::vector<std::size_t> s;
  for (std::size_t b = 1; b <= max && b < (std::size_t{64} << 10); b *= 4) s.push_back(b);
  for (std::size_t b = std::size_t{64} << 10; b <= max; b *= 2) s.push_back(b);
  return s;
}

double median_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return quantile(v, 0.5);
}

// Anonymous pages of the buffer's own: the cache pins whole pages, and a
// buffer sharing none with the others keeps each size's registration apart.
struct mapped_buffer {
  explicit mapped_buffer(std::size_t n) : bytes(n) {
    void* p = ::mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw std::runtime_error(fmt::format("mmap of {} bytes failed", n));
    data = static_cast<unsigned char*>(p);
  }
  ~mapped_buffer() { ::munmap(data, bytes); }
  mapped_buffer(const mapped_buffer&) = delete;
  mapped_buffer& operator=(const mapped_buffer&) = delete;
  unsigned char* data;
  std::size_t bytes;
};

// --reuse: first, second and later copies of one buffer through a cache.
nlohmann::json run_reuse(xfer::mem::device_step& step, const xfer::mem::staged_tuning& tuning, std::size_t min,
                         std::size_t max, unsigned repeats) {
  xfer::mem::staged_copier_options plain_options;
  plain_options.tuning = tuning;
  xfer::mem::staged_copier staged(step, plain_options);
  const device_ref dev = step.allocate(max);
  struct freer {
    xfer::mem::device_step& s;
    device_ref d;
    ~freer() { s.deallocate(d); }
  } free_dev{step, dev};
  // One cache and one copier for every point, their staging warmed by a
  // copy of a scratch buffer: a point's first copy is then a staged copy
  // at the copier's steady state, not one that also pins the ring.
  xfer::mem::registration_cache cache(step, {.max_pinned_bytes = max + (std::size_t{4} << 20)});
  xfer::mem::staged_copier_options o = plain_options;
  o.registrations = &cache;
  xfer::mem::staged_copier reusing(step, o);
  {
    std::vector<unsigned char> scratch(min);
    reusing.copy_to_device(dev, 0, scratch.data(), min);
    reusing.copy_to_host(scratch.data(), dev, 0, min);
    cache.forget(scratch.data(), min);
  }
  auto points = nlohmann::json::array();
  std::printf("%10s %4s %10s %10s %12s %12s %12s %9s\n", "size", "dir", "first ms", "second ms", "later GB/s",
              "staged GB/s", "pinned GB/s", "later/pin");
  for (std::size_t bytes = min; bytes <= max; bytes *= 2) {
    for (const bool to_device : {true, false}) {
      mapped_buffer host(bytes);
      std::vector<unsigned char> expect(bytes);
      for (std::size_t i = 0; i < bytes; ++i) expect[i] = host.data[i] = static_cast<unsigned char>(i * 29 + (i >> 12));
      if (!to_device) step.plain_to_device(dev, 0, expect.data(), bytes);
      const auto before = cache.stats();
      auto copy = [&](xfer::mem::staged_copier& c, unsigned char* h) {
        return timed([&] {
          if (to_device) c.copy_to_device(dev, 0, h, bytes);
          else c.copy_to_host(h, dev, 0, bytes);
        });
      };
      std::vector<double> series;  // first, second, later...
      for (unsigned i = 0; i < repeats + 2; ++i) series.push_back(copy(reusing, host.data));
      // The data: what the registered copies moved.
      std::vector<unsigned char> back(bytes);
      if (to_device) step.plain_to_host(back.data(), dev, 0, bytes);
      const unsigned char* got = to_device ? back.data() : host.data;
      if (std::memcmp(got, expect.data(), bytes) != 0)
        throw std::runtime_error(fmt::format("reuse {} bytes {}: the data did not arrive intact", bytes,
                                             to_device ? "to the device" : "to the host"));
      const auto stats = cache.stats();
      cache.forget(host.data, bytes);  // before its pages go
      // The baselines on the same buffer: staged without the cache, and
      // the plain copy from pinned memory (the copier's staging kind).
      std::vector<double> staged_s, pinned_s;
      for (unsigned i = 0; i < repeats; ++i) staged_s.push_back(copy(staged, host.data));
      auto& pinned_kind = step.staging_memory();
      void* pinned = pinned_kind.allocate(bytes, 4096);
      for (unsigned i = 0; i < repeats; ++i)
        pinned_s.push_back(timed([&] {
          if (to_device) step.plain_to_device(dev, 0, pinned, bytes);
          else step.plain_to_host(pinned, dev, 0, bytes);
        }));
      pinned_kind.deallocate(pinned, bytes, 4096);
      const std::vector<double> later(series.begin() + 2, series.end());
      const double later_gbs = bytes / median_of(later) / 1e9, staged_gbs = bytes / median_of(staged_s) / 1e9,
                   pinned_gbs = bytes / median_of(pinned_s) / 1e9;
      std::printf("%10s %4s %10.2f %10.2f %12.2f %12.2f %12.2f %8.0f%%\n", xfer::format_size(bytes).c_str(),
                  to_device ? "h2d" : "d2h", series[0] * 1e3, series[1] * 1e3, later_gbs, staged_gbs, pinned_gbs,
                  100 * later_gbs / pinned_gbs);
      std::fflush(stdout);
      points.push_back({{"bytes", bytes},
                        {"direction", to_device ? "h2d" : "d2h"},
                        {"first_seconds", series[0]},
                        {"second_seconds", series[1]},
                        {"later_seconds", later},
                        {"staged_seconds", staged_s},
                        {"pinned_plain_seconds", pinned_s},
                        {"registrations", stats.registered - before.registered},
                        {"registered_copies", stats.hits - before.hits},
                        {"refusal", stats.last_refusal},
                        {"verified", true}});
    }
  }
  return points;
}

constexpr const char* usage =
    "usage: xfer_bench_staged_vs_plain [--step runtime|driver|host] [--max SIZE] [--seconds S] [--json FILE]\n"
    "       xfer_bench_staged_vs_plain --reuse [--min SIZE] [--max SIZE] [--repeats N] [--step ...] [--json FILE]\n"
    "\n"
    "Interleaves the plain copy and the staged copier on the same pageable buffers (powers of four from\n"
    "1 B to 16K, then each power of two from 64K to --max, default 1G), both directions, --seconds of\n"
    "sampling each (default 0.25), and\n"
    "says per size whether the copier was slower, the same or faster (the ratio's 95% interval).\n"
    "The copier's tuning is the machine's calibration; XFER_STAGED_* override it (XFER_STAGED_HANDOFF_BYTES=1\n"
    "sends every size through the pipeline). --reuse measures the registration cache instead: a reused\n"
    "buffer's first, second and later copies, from --min (default 16M) to --max. Exit 0: none slower;\n"
    "3: some size slower; 2: bad arguments.\n";

int run(int argc, char** argv) {
  std::string step_name = XFER_HAVE_CUDA ? "runtime" : "host", json_path;
  std::size_t max = std::size_t{1} << 30, min = std::size_t{16} << 20;
  double budget = 0.25;
  bool reuse = false;
  unsigned repeats = 20;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw std::invalid_argument(a + " needs a value");
      return argv[++i];
    };
    if (a == "--help" || a == "-h") {
      std::fputs(usage, stdout);
      return 0;
    }
    if (a == "--step") step_name = value();
    else if (a == "--max") max = xfer::parse_size(value());
    else if (a == "--seconds") budget = std::stod(value());
    else if (a == "--json") json_path = value();
    else if (a == "--reuse") reuse = true;
    else if (a == "--min") min = xfer::parse_size(value());
    else if (a == "--repeats") repeats = static_cast<unsigned>(std::stoul(value()));
    else throw std::invalid_argument("unknown option " + a + " (--step, --max, --seconds, --json, --reuse, --min, --repeats)");
  }
  if (reuse && (min == 0 || min > max || repeats == 0))
    throw std::invalid_argument("--reuse needs 0 < --min <= --max and --repeats > 0");

  // An output that cannot be written is refused before anything is measured.
  if (!json_path.empty()) xfer::check_writable(json_path);
  auto step = make_step(step_name);
  const auto c0 = clock_type::now();
  const auto tuning = xfer::mem::tuning_for(*step, [](xfer::mem::device_step& s) {
    return xfer::mem::calibrate_staged(s);
  });
  const double tuning_s = seconds(c0, clock_type::now());
  std::printf("step %s, device %s: chunk %zu, ring %u, threads %u, handoff to device %zu, to host %zu "
              "(tuning took %.3f s: a calibration when no cached tuning existed)\n",
              std::string(step->name()).c_str(), step->device_key().c_str(), tuning.chunk_bytes, tuning.ring_depth,
              tuning.threads, tuning.handoff_to_device_bytes, tuning.handoff_to_host_bytes, tuning_s);
  if (reuse) {
    nlohmann::json out{{"schema", "xferbench/registration-reuse/v1"},
                       {"step", std::string(step->name())},
                       {"device", step->device_key()},
                       {"repeats", repeats},
                       {"points", run_reuse(*step, tuning, min, max, repeats)}};
    if (!json_path.empty()) xfer::write_output(json_path, out.dump() + '\n');
    return 0;
  }
  xfer::mem::staged_copier_options options;
  options.tuning = tuning;
  xfer::mem::staged_copier copier(*step, options);

  // Pageable, touched buffers: what the copier is for.
  std::vector<unsigned char> src(max), back(max);
  for (std::size_t i = 0; i < max; ++i) src[i] = static_cast<unsigned char>(i * 31 + (i >> 12));
  std::memset(back.data(), 0, max);
  const device_ref dev = step->allocate(max);
  struct freer {
    xfer::mem::device_step& s;
    device_ref d;
    ~freer() { s.deallocate(d); }
  } free_dev{*step, dev};

  nlohmann::json out;
  out["schema"] = "xferbench/staged-vs-plain/v1";
  out["step"] = std::string(step->name());
  out["device"] = step->device_key();
  out["tuning"] = {{"chunk_bytes", tuning.chunk_bytes},
                   {"ring_depth", tuning.ring_depth},
                   {"threads", tuning.threads},
                   {"handoff_to_device_bytes", tuning.handoff_to_device_bytes},
                   {"handoff_to_host_bytes", tuning.handoff_to_host_bytes}};
  out["tuning_seconds"] = tuning_s;
  out["budget_seconds"] = budget;
  out["points"] = nlohmann::json::array();
  std::printf("%10s %4s %8s %12s %12s %9s %9s %16s %s\n", "size", "dir", "pairs", "plain GB/s", "staged GB/s",
              "path", "ratio", "95% interval", "verdict");
  int slower = 0;
  for (const std::size_t bytes : sizes_up_to(max)) {
    for (const bool to_device : {true, false}) {
      auto plain = [&] {
        if (to_device) step->plain_to_device(dev, 0, src.data(), bytes);
        else step->plain_to_host(back.data(), dev, 0, bytes);
      };
      auto staged = [&] {
        if (to_device) copier.copy_to_device(dev, 0, src.data(), bytes);
        else copier.copy_to_host(back.data(), dev, 0, bytes);
      };
      plain();
      staged();  // warm-up: the ring pinned, the caches and the pool filled
      std::vector<double> tp, ts, ratio;
      const auto start = clock_type::now();
      // 2000 pairs pin the ratio within a fraction of a percent and keep the
      // raw samples small enough to commit.
      for (std::size_t pair = 0; pair < 2000; ++pair) {
        if (pair >= 5 && seconds(start, clock_type::now()) > budget) break;
        double p, s;
        if (pair % 2 == 0) {
          p = timed(plain);
          s = timed(staged);
        } else {
          s = timed(staged);
          p = timed(plain);
        }
        tp.push_back(p);
        ts.push_back(s);
        ratio.push_back(s / p);
      }
      // The data: the staged copy one way, the plain copy the other.
      std::memset(back.data(), 0, bytes);
      if (to_device) {
        copier.copy_to_device(dev, 0, src.data(), bytes);
        step->plain_to_host(back.data(), dev, 0, bytes);
      } else {
        step->plain_to_device(dev, 0, src.data(), bytes);
        copier.copy_to_host(back.data(), dev, 0, bytes);
      }
      if (std::memcmp(back.data(), src.data(), bytes) != 0)
        throw std::runtime_error(fmt::format("{} bytes {}: the data did not arrive intact", bytes,
                                             to_device ? "to the device" : "to the host"));

      std::vector<double> sp = tp, ss = ts;
      std::sort(sp.begin(), sp.end());
      std::sort(ss.begin(), ss.end());
      const auto r = ratios(ratio);
      const bool handed = bytes < tuning.handoff(to_device);
      // Slower or faster only when the whole interval says so, by more than
      // 2% (a clock read and a function call are within that at any size).
      const char* verdict = r.low > 1.02 ? "SLOWER" : r.high < 0.98 ? "faster" : "same";
      if (r.low > 1.02) ++slower;
      const double gbs_p = bytes / quantile(sp, 0.5) / 1e9, gbs_s = bytes / quantile(ss, 0.5) / 1e9;
      std::printf("%10s %4s %8zu %12.2f %12.2f %9s %9.3f %7.3f-%-8.3f %s\n", xfer::format_size(bytes).c_str(),
                  to_device ? "h2d" : "d2h", ratio.size(), gbs_p, gbs_s, handed ? "plain" : "staged", r.median,
                  r.low, r.high, verdict);
      std::fflush(stdout);
      out["points"].push_back({{"bytes", bytes},
                               {"direction", to_device ? "h2d" : "d2h"},
                               {"staged_path", handed ? "plain (below the handoff)" : "pipeline"},
                               {"plain_seconds", tp},
                               {"staged_seconds", ts},
                               {"ratio_median", r.median},
                               {"ratio_low", r.low},
                               {"ratio_high", r.high},
                               {"verdict", verdict},
                               {"verified", true}});
    }
  }
  std::printf("%d size/direction pairs slower through the copier\n", slower);
  if (!json_path.empty()) xfer::write_output(json_path, out.dump() + '\n');
  return slower ? 3 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "xfer_bench_staged_vs_plain: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "xfer_bench_staged_vs_plain: %s\n", e.what());
    return 1;
  }
}
