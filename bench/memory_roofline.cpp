// The machine's memory roofline and the staged copier on it (issue 37, item
// 2). The staged copy's speed is a question of bytes through the host's
// memory system; this bench measures what that system gives and how many
// bytes each staging design asks of it per byte delivered:
//
//   1. memory bandwidth the way STREAM does: arrays at least 4x the
//      last-level cache, each kernel repeated, best and median, for 1..N
//      threads: read (a sum), write (regular and streaming stores), copy
//      (memcpy as glibc does it, regular stores, streaming stores);
//   2. the CPU side of each staged design: a large source copied into a ring
//      of R bytes reused over and over (host to device), or a ring copied out
//      to a large destination (device to host), pieces claimed by the
//      copier's threads as the copier claims them, R from 256 KiB to 64 MiB
//      (around the LLC), regular against streaming stores;
//   3. DRAM bytes per byte delivered per design: counted by the memory
//      controllers where the machine lets us (uncore_imc), else the model
//      (roofline.hpp), labelled as such; and the roofline bound
//      min(link, memory bandwidth / bytes per byte);
//   4. with CUDA and a GPU: the staged copier under each design beside a
//      pinned copy of the same size in the same run, data verified
//      (roofline_device.cpp);
//   5. with --contention (--contention-only: it alone), the copy engine's
//      rate while N CPU threads copy through a ring, and theirs meanwhile
//      (roofline_contention.cpp; its options start --contention-).
//
//   xfer_bench_roofline [--threads 1,2,4] [--array BYTES] [--reps N]
//       [--rings 256K,...] [--ring-depth D] [--copier-threads LIST]
//       [--fit-fraction F] [--link-gbs G] [--no-device] [--designs "1M/8 8M/4/nt"]
//       [--sizes 16M,64M,256M,1G] [--seconds S] [--json FILE]
//       [--contention | --contention-only] [--contention-threads 0,2,4] [--contention-paces 0,55]
//       [--contention-window S] [--contention-windows N] [--contention-buffer BYTES]
//       [--contention-chunk BYTES] [--contention-slots N] [--contention-engine-bytes BYTES]
//       [--contention-no-shared] [--contention-demote] [--contention-step gpu|host]
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <xfer/core/output_file.hpp>
#include <xfer/core/size.hpp>
#include <xfer/mem/nontemporal.hpp>
#include <xfer/mem/staged/tuning.hpp>
#include <xfer/mem/thread_team.hpp>
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

#include "roofline.hpp"

namespace {

using clock_type = std::chrono::steady_clock;
using roofline::rate;

struct free_deleter {
  void operator()(void* p) const noexcept { std::free(p); }
};
using buffer = std::unique_ptr<unsigned char, free_deleter>;

buffer allocate(std::size_t bytes) {
  void* p = std::aligned_alloc(4096, (bytes + 4095) / 4096 * 4096);
  if (!p) throw std::runtime_error(fmt::format("cannot allocate {} bytes", bytes));
  return buffer(static_cast<unsigned char*>(p));
}

// [begin, end) of thread i's share of n bytes, on cache lines.
std::pair<std::size_t, std::size_t> share(std::size_t n, unsigned i, unsigned threads) {
  const std::size_t lines = n / 64;
  return {lines * i / threads * 64, i + 1 == threads ? n : lines * (i + 1) / threads * 64};
}

// ---- kernels --------------------------------------------------------------------
// Each kernel is written so the compiler cannot turn it into a libc call
// that picks its own stores (GCC makes a plain copy loop a memcpy, and glibc
// streams large copies): what is measured is what the name says.

std::atomic<std::uint64_t> sink{0};

void read_sum(const unsigned char* p, std::size_t n) {
  const auto* w = reinterpret_cast<const std::uint64_t*>(p);
  std::uint64_t a = 0, b = 0, c = 0, d = 0;
  std::size_t i = 0, words = n / 8;
  for (; i + 4 <= words; i += 4) a += w[i], b += w[i + 1], c += w[i + 2], d += w[i + 3];
  for (; i < words; ++i) a += w[i];
  sink.fetch_add(a + b + c + d, std::memory_order_relaxed);
}

void write_regular(unsigned char* p, std::size_t n, std::uint64_t seed) {
  auto* w = reinterpret_cast<std::uint64_t*>(p);
  // Values that differ per word: not a memset.
  for (std::size_t i = 0, words = n / 8; i < words; ++i) w[i] = seed + i;
}

void copy_regular(unsigned char* dst, const unsigned char* src, std::size_t n) {
#if defined(__SSE2__)
  std::size_t i = 0;
  for (; i + 64 <= n; i += 64) {
    const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i));
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i + 16));
    const __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i + 32));
    const __m128i d = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i + 48));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i), a);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i + 16), b);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i + 32), c);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i + 48), d);
  }
  std::memcpy(dst + i, src + i, n - i);
#else
  std::memcpy(dst, src, n);  // no vector ISA we know: memcpy, labelled below
#endif
}

struct kernel {
  const char* name;
  // Bytes the kernel names per array byte (STREAM's convention: a copy
  // moves 2), and the DRAM bytes it causes per array byte (the model:
  // regular stores add a read for ownership).
  double named, dram;
  int kind;  // 0 read, 1 write, 2 write nt, 3 memcpy, 4 copy regular, 5 copy nt
  // Whether its rate sets the machine's memory bandwidth: only kernels whose
  // DRAM bytes are not in doubt do (a CPU that skips the read for ownership
  // of whole lines would make a regular store's model count double).
  bool sets_bandwidth;
};
const kernel kernels[] = {
    {"read", 1, 1, 0, true},          {"write", 1, 2, 1, false}, {"write-nt", 1, 1, 2, true},
    {"copy-memcpy", 2, 0, 3, false},  // glibc picks its stores: no model
    {"copy", 2, 3, 4, false},         {"copy-nt", 2, 2, 5, true},
};

void run_kernel(const kernel& k, unsigned char* a, unsigned char* b, std::size_t n, unsigned i, unsigned t,
                std::uint64_t seed) {
  const auto [lo, hi] = share(n, i, t);
  switch (k.kind) {
    case 0: read_sum(a + lo, hi - lo); break;
    case 1: write_regular(a + lo, hi - lo, seed); break;
    case 2: xfer::mem::nontemporal_fill(a + lo, static_cast<unsigned char>(seed), hi - lo); break;
    case 3: std::memcpy(b + lo, a + lo, hi - lo); break;
    case 4: copy_regular(b + lo, a + lo, hi - lo); break;
    case 5: xfer::mem::nontemporal_copy(b + lo, a + lo, hi - lo); break;
  }
}

template <class F>
std::vector<double> repeat(unsigned reps, F&& f) {
  f();  // warm-up: pages touched, threads awake
  std::vector<double> s;
  for (unsigned r = 0; r < reps; ++r) {
    const auto t0 = clock_type::now();
    f();
    s.push_back(std::chrono::duration<double>(clock_type::now() - t0).count());
  }
  return s;
}

struct stream_result {
  double memory_gbs = 0;  // the best DRAM bytes/s of read, write-nt and copy-nt
  std::string memory_from;
  nlohmann::json json = nlohmann::json::array();
};

stream_result stream_part(unsigned char* a, unsigned char* b, std::size_t n, const std::vector<unsigned>& threads,
                          unsigned reps) {
  stream_result out;
  std::printf("\n== memory bandwidth (STREAM-style, arrays of %s, best / median of %u)\n",
              xfer::format_size(n).c_str(), reps);
  std::printf("%8s %12s %12s %12s %14s\n", "threads", "kernel", "best GB/s", "median GB/s", "DRAM GB/s*");
  for (const unsigned t : threads) {
    xfer::mem::thread_team team(t);
    for (const auto& k : kernels) {
      std::uint64_t seed = 1;
      auto s = repeat(reps, [&] {
        ++seed;
        team.run([&](unsigned i) { run_kernel(k, a, b, n, i, t, seed); });
      });
      const rate r = roofline::summarize(k.named * static_cast<double>(n), s);
      const double dram = k.dram > 0 ? r.best_gbs / k.named * k.dram : 0;
      if (k.sets_bandwidth && dram > out.memory_gbs) out.memory_gbs = dram, out.memory_from = fmt::format("{} x{}", k.name, t);
      std::printf("%8u %12s %12.2f %12.2f %14s\n", t, k.name, r.best_gbs, r.median_gbs,
                  k.dram > 0 ? fmt::format("{:.2f}", dram).c_str() : "-");
      out.json.push_back({{"threads", t},
                          {"kernel", k.name},
                          {"array_bytes", n},
                          {"named_bytes_per_array_byte", k.named},
                          {"dram_bytes_per_array_byte_model", k.dram > 0 ? nlohmann::json(k.dram) : nlohmann::json()},
                          {"rate", roofline::to_json(r)},
                          {"dram_gbs_model", dram}});
    }
  }
  std::printf("* DRAM bytes by the model (regular stores read each line first); memory bandwidth = %.2f GB/s (%s; "
              "read, write-nt and copy-nt only: their DRAM bytes are not in doubt)\n",
              out.memory_gbs, out.memory_from.c_str());
  return out;
}

// ---- the CPU side of a staged design ---------------------------------------------

// Moves n bytes between `big` and a ring of `depth` chunks of `chunk` bytes
// as the copier does: chunk c through slot c % depth, cut into one piece per
// thread, pieces claimed in order with one atomic add. Nothing waits for a
// device: this is the rate the CPU side allows.
void ring_pass(xfer::mem::thread_team& team, unsigned char* big, unsigned char* ring, std::size_t n,
               std::size_t chunk, unsigned depth, bool to_device, bool nt) {
  const unsigned t = team.size();
  const std::size_t piece = ((chunk + t - 1) / t + 63) / 64 * 64;
  const std::size_t per_chunk = (chunk + piece - 1) / piece, chunks = (n + chunk - 1) / chunk;
  std::atomic<std::size_t> next{0};
  team.run([&](unsigned) {
    for (std::size_t q; (q = next.fetch_add(1, std::memory_order_relaxed)) < chunks * per_chunk;) {
      const std::size_t c = q / per_chunk, k = q % per_chunk;
      const std::size_t at = c * chunk + k * piece, end = std::min(n, c * chunk + chunk);
      if (at >= end) continue;
      const std::size_t len = std::min(piece, end - at);
      unsigned char* slot = ring + (c % depth) * chunk + k * piece;
      unsigned char* dst = to_device ? slot : big + at;
      const unsigned char* src = to_device ? big + at : slot;
      if (nt) xfer::mem::nontemporal_copy(dst, src, len);
      else std::memcpy(dst, src, len);  // what the copier's copy_piece does
    }
  });
}

nlohmann::json ring_part(unsigned char* big, std::size_t n, const std::vector<std::size_t>& rings, unsigned depth,
                         const std::vector<unsigned>& threads, unsigned reps, std::size_t llc, double fraction,
                         double memory_gbs, std::optional<double> link, roofline::dram_counter& counter) {
  auto out = nlohmann::json::array();
  std::printf("\n== the CPU side of staged designs (ring of R bytes = %u chunks, %s moved per pass)\n", depth,
              xfer::format_size(n).c_str());
  std::printf("%8s %5s %7s %4s %4s %11s %12s %7s %11s %11s\n", "ring", "fits", "threads", "dir", "st", "best GB/s",
              "median GB/s", "B/B", "", "bound GB/s");
  const std::size_t largest = *std::max_element(rings.begin(), rings.end());
  buffer ring = allocate(largest);
  std::memset(ring.get(), 1, largest);
  for (const unsigned t : threads) {
    xfer::mem::thread_team team(t);
    for (const std::size_t r : rings) {
      const bool fit = roofline::fits(r, llc, fraction);
      for (const bool to_device : {true, false})
        for (const bool nt : {false, true}) {
          std::optional<std::pair<double, double>> counted;
          auto s = repeat(reps, [&] { ring_pass(team, big, ring.get(), n, r / depth, depth, to_device, nt); });
          if (counter.available()) {
            counter.start();
            ring_pass(team, big, ring.get(), n, r / depth, depth, to_device, nt);
            counted = counter.stop();
          }
          const rate rt = roofline::summarize(static_cast<double>(n), s);
          const auto model = roofline::staged_model(to_device, fit, nt);
          const std::optional<double> total =
              counted ? std::optional<double>((counted->first + counted->second) / static_cast<double>(n))
                      : std::nullopt;
          const auto bpb = roofline::bytes_per_byte(model, total);
          const double b = bpb["value"].get<double>();
          double bound = b > 0 ? memory_gbs / b : memory_gbs;
          if (link) bound = std::min(bound, *link);
          std::printf("%8s %5s %7u %4s %4s %11.2f %12.2f %7.2f %11s %11.2f\n", xfer::format_size(r).c_str(),
                      fit ? "yes" : "no", t, to_device ? "h2d" : "d2h", nt ? "nt" : "reg", rt.best_gbs,
                      rt.median_gbs, b, counted ? "(counted)" : "(model)", bound);
          out.push_back({{"ring_bytes", r},
                         {"ring_depth", depth},
                         {"chunk_bytes", r / depth},
                         {"threads", t},
                         {"direction", to_device ? "h2d" : "d2h"},
                         {"stores", nt ? "non-temporal" : "regular (memcpy)"},
                         {"fits_llc", fit},
                         {"bytes_moved_per_pass", n},
                         {"cpu_side", roofline::to_json(rt)},
                         {"dram_bytes_per_byte", bpb},
                         {"counted_read_write_bytes",
                          counted ? nlohmann::json{counted->first, counted->second} : nlohmann::json()},
                         {"roofline_bound_gbs", bound},
                         {"link_gbs", link ? nlohmann::json(*link) : nlohmann::json("unknown")}});
        }
    }
  }
  std::printf("B/B: DRAM bytes per byte delivered; bound = min(link, memory bandwidth / B/B)%s\n",
              link ? "" : " (link unknown here: memory only)");
  return out;
}

unsigned cpus() {
  cpu_set_t set;
  return ::sched_getaffinity(0, sizeof set, &set) == 0 ? static_cast<unsigned>(CPU_COUNT(&set)) : 1;
}

template <class T, class F>
std::vector<T> split(const std::string& text, char sep, F&& parse) {
  std::vector<T> out;
  std::stringstream in(text);
  for (std::string s; std::getline(in, s, sep);)
    if (!s.empty()) out.push_back(parse(s));
  return out;
}

// Measures; returns where the JSON goes (empty: nowhere) and the JSON.
std::pair<std::string, nlohmann::json> run(int argc, char** argv) {
  const unsigned ncpu = cpus();
  std::vector<unsigned> threads;
  for (unsigned t = 1; t < ncpu; t *= 2) threads.push_back(t);
  threads.push_back(ncpu);
  std::vector<unsigned> copier_threads{xfer::mem::default_staged_threads()};
  std::vector<std::size_t> rings;
  for (std::size_t r = std::size_t{256} << 10; r <= (std::size_t{64} << 20); r *= 2) rings.push_back(r);
  std::size_t array = 0;
  unsigned reps = 5, depth = 4;
  double fraction = 0.5;
  std::optional<double> link;
  bool device = true;
  std::string json_path,
      designs = "8M/4 8M/4/size 8M/4/nt 4M/4 2M/8 1M/8 256K/8";
  roofline::device_options dev;
  roofline::contention_options contention;
  dev.sizes = {std::size_t{16} << 20, std::size_t{64} << 20, std::size_t{256} << 20, std::size_t{1} << 30};
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw std::invalid_argument(a + " needs a value");
      return argv[++i];
    };
    auto uints = [](const std::string& s) {
      return split<unsigned>(s, ',', [](const std::string& x) { return static_cast<unsigned>(std::stoul(x)); });
    };
    auto sizes = [](const std::string& s) {
      return split<std::size_t>(s, ',', [](const std::string& x) { return xfer::parse_size(x); });
    };
    if (a == "--threads") threads = uints(value());
    else if (a == "--copier-threads") copier_threads = uints(value());
    else if (a == "--array") array = xfer::parse_size(value());
    else if (a == "--reps") reps = static_cast<unsigned>(std::stoul(value()));
    else if (a == "--rings") rings = sizes(value());
    else if (a == "--ring-depth") depth = static_cast<unsigned>(std::stoul(value()));
    else if (a == "--fit-fraction") fraction = std::stod(value());
    else if (a == "--link-gbs") link = std::stod(value());
    else if (a == "--no-device") device = false;
    else if (a == "--designs") designs = value();
    else if (a == "--sizes") dev.sizes = sizes(value());
    else if (a == "--seconds") dev.seconds = std::stod(value());
    else if (a == "--json") json_path = value();
    else if (!roofline::contention_option(a, value, contention))
      throw std::invalid_argument("unknown option " + a +
                                  " (--threads, --copier-threads, --array, --reps, --rings, --ring-depth, "
                                  "--fit-fraction, --link-gbs, --no-device, --designs, --sizes, --seconds, --json, "
                                  "--contention[-only] and --contention-*)");
  }
  contention.device = device;
  if (contention.enabled) contention.validate();  // before minutes of the other parts
  for (auto* list : {&threads, &copier_threads}) {  // each count once, in the order given
    std::vector<unsigned> once;
    for (const unsigned t : *list)
      if (std::find(once.begin(), once.end(), t) == once.end()) once.push_back(t);
    *list = once;
  }
  if (threads.empty() || copier_threads.empty() || rings.empty() || reps == 0 || depth == 0)
    throw std::invalid_argument("empty thread, ring list or zero repetitions");
  if (!json_path.empty()) xfer::check_writable(json_path);
  for (const auto& d : split<std::string>(designs, ' ', [](const std::string& s) { return s; }))
    dev.designs.push_back(roofline::parse_design(d, xfer::mem::default_staged_threads()));

  const std::size_t llc = xfer::mem::last_level_cache_bytes();
  roofline::dram_counter counter;
  nlohmann::json out;
  out["schema"] = "xferbench/memory-roofline/v1";
  out["cpus"] = ncpu;
  out["llc_bytes"] = llc;
  out["fit_fraction"] = fraction;
  out["dram_counting"] = counter.available() ? "uncore_imc cas_count" : "model: " + counter.unavailable();
  out["nt_store_isa"] = std::string(xfer::mem::to_string(xfer::mem::best_store_isa()));
  std::printf("CPUs usable %u; LLC %s (a ring fits when at most %.2f of it); DRAM bytes: %s\n", ncpu,
              llc ? xfer::format_size(llc).c_str() : "unknown",
              fraction, counter.available() ? "counted by uncore_imc" : ("the model (" + counter.unavailable() + ")").c_str());
  if (!contention.only) {
    // STREAM's rule: each array at least 4x the largest cache; at least 64 MiB.
    if (array == 0) array = std::max<std::size_t>(4 * llc, std::size_t{64} << 20);

    buffer a = allocate(array), b = allocate(array);
    xfer::mem::thread_team toucher(ncpu);
    toucher.run([&](unsigned i) {  // first touch by the threads that use them
      const auto [lo, hi] = share(array, i, ncpu);
      write_regular(a.get() + lo, hi - lo, 7);
      std::memset(b.get() + lo, 0, hi - lo);
    });
    const auto stream = stream_part(a.get(), b.get(), array, threads, reps);
    out["stream"] = stream.json;
    out["memory_gbs"] = stream.memory_gbs;
    out["memory_gbs_from"] = stream.memory_from;
    out["rings"] = ring_part(a.get(), array, rings, depth, copier_threads, reps, llc, fraction, stream.memory_gbs, link,
                             counter);
    a.reset();
    b.reset();
    if (device) {
      dev.llc = llc;
      dev.fit_fraction = fraction;
      dev.memory_gbs = stream.memory_gbs;
      dev.link_gbs = link;
      out["device"] = roofline::run_device(dev, counter);
    }
  }
  if (contention.enabled) out["contention"] = roofline::run_contention(contention);
  return {json_path, out};
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const auto [path, out] = run(argc, argv);
    if (!path.empty()) xfer::write_output(path, out.dump() + '\n');
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "xfer_bench_roofline: %s\n", e.what());
    return dynamic_cast<const std::invalid_argument*>(&e) ? 2 : 1;  // 2: a usage error
  }
}
