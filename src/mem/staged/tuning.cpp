#include <sched.h>
#include <unistd.h>

#include <algorithm>

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <vector>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <fmt/format.h>
#include <xfer/mem/staged/device_step.hpp>
#include <xfer/mem/staged/tuning.hpp>

namespace xfer::mem {

unsigned default_staged_threads() noexcept {
  cpu_set_t set;
  unsigned cpus = 1;
  if (::sched_getaffinity(0, sizeof set, &set) == 0) cpus = static_cast<unsigned>(CPU_COUNT(&set));
  return std::clamp(cpus * 3 / 4, 4u, 12u);
}

void staged_tuning::validate() const {
  if (chunk_bytes == 0) throw std::invalid_argument("staged tuning: chunk_bytes must be positive");
  // A chunk is one pinned staging buffer; beyond 1 GiB it is a unit mistake,
  // and ring_depth of them would pin more than most machines can spare.
  if (chunk_bytes > (std::size_t{1} << 30))
    throw std::invalid_argument(fmt::format("staged tuning: chunk_bytes {} is over 1 GiB", chunk_bytes));
  if (ring_depth == 0) throw std::invalid_argument("staged tuning: ring_depth must be positive");
  if (threads == 0) throw std::invalid_argument("staged tuning: threads must be positive");
  if (threads > 256) throw std::invalid_argument(fmt::format("staged tuning: {} threads is over 256", threads));
}

std::size_t staged_tuning::piece_bytes() const noexcept {
  constexpr std::size_t line = 64;
  const std::size_t t = threads ? threads : 1;
  const std::size_t piece = (chunk_bytes + t - 1) / t;
  return (piece + line - 1) / line * line;
}

std::vector<std::size_t> staged_chunk_starts(std::size_t bytes, std::size_t chunk) {
  if (chunk == 0) throw std::invalid_argument("staged_chunk_starts: chunk must be positive");
  // The ramp: chunk/8, chunk/4, chunk/2, none under 64 KiB (below that a
  // DMA's own cost outweighs the wait it saves).
  std::vector<std::size_t> ramp;
  for (std::size_t r = chunk / 8; r < chunk; r *= 2)
    if (r >= (std::size_t{64} << 10)) ramp.push_back(r);
  std::size_t ramp_bytes = 0;
  for (std::size_t r : ramp) ramp_bytes += r;
  std::vector<std::size_t> lengths;
  if (ramp.empty() || bytes < 2 * ramp_bytes + chunk) {
    // Too short for both ramps: even chunks of the ramp's first step (or
    // of chunk, where there is no ramp).
    const std::size_t even = ramp.empty() ? chunk : ramp.front();
    for (std::size_t left = bytes; left > 0; left -= std::min(left, even)) lengths.push_back(std::min(left, even));
  } else {
    lengths = ramp;
    std::size_t middle = bytes - 2 * ramp_bytes;
    if (const std::size_t rest = middle % chunk) lengths.push_back(rest), middle -= rest;
    for (; middle > 0; middle -= chunk) lengths.push_back(chunk);
    lengths.insert(lengths.end(), ramp.rbegin(), ramp.rend());
  }
  std::vector<std::size_t> starts{0};
  for (std::size_t l : lengths) starts.push_back(starts.back() + l);
  return starts;
}

namespace {

std::size_t positive_from_env(const char* name, std::size_t fallback, std::size_t max) {
  const char* v = std::getenv(name);
  if (!v || !*v) return fallback;
  char* end = nullptr;
  errno = 0;
  const unsigned long long n = std::strtoull(v, &end, 10);
  if (errno != 0 || *end != '\0' || n == 0 || n > max || v[0] == '-')
    throw std::invalid_argument(fmt::format("{}={}: expected a positive integer up to {}", name, v, max));
  return static_cast<std::size_t>(n);
}

// Not std::call_once: where the calibration throws, call_once must leave
// the flag unset through an exception unwinding pthread_once, which hangs
// under ThreadSanitizer (and did on older glibc, GCC bug 66146).
struct cache_entry {
  std::mutex mutex;
  bool done = false;
  staged_tuning tuning;
};

std::mutex cache_mutex;
std::map<std::string, std::shared_ptr<cache_entry>>& cache() {
  static std::map<std::string, std::shared_ptr<cache_entry>> c;
  return c;
}

// The cache file: one line per key,
// "<key>\t<chunk> <depth> <threads> <handoff to device> <handoff to host>".
// A line of another shape (an older version's four fields) does not parse
// and is calibrated again.
std::optional<staged_tuning> read_cached(const std::string& file, const std::string& key) {
  std::ifstream in(file);
  std::string line;
  std::optional<staged_tuning> found;
  while (std::getline(in, line)) {
    const auto tab = line.find('\t');
    if (tab == std::string::npos || line.compare(0, tab, key) != 0 || tab != key.size()) continue;
    std::istringstream fields(line.substr(tab + 1));
    staged_tuning t;
    std::string rest;
    if (!(fields >> t.chunk_bytes >> t.ring_depth >> t.threads >> t.handoff_to_device_bytes >>
          t.handoff_to_host_bytes) ||
        (fields >> rest))
      continue;
    try {
      t.validate();
    } catch (const std::invalid_argument&) {
      continue;  // a hand-edited or damaged line: calibrate again
    }
    found = t;  // the last line for a key wins
  }
  return found;
}

// Rewrites the file with the key's line replaced, through a temporary file
// and a rename, so a reader never sees half a file.
void write_cached(const std::string& file, const std::string& key, const staged_tuning& t) {
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(file).parent_path(), ec);
  std::vector<std::string> lines;
  {
    std::ifstream in(file);
    std::string line;
    while (std::getline(in, line))
      if (line.compare(0, key.size() + 1, key + '\t') != 0) lines.push_back(line);
  }
  lines.push_back(fmt::format("{}\t{} {} {} {} {}", key, t.chunk_bytes, t.ring_depth, t.threads,
                              t.handoff_to_device_bytes, t.handoff_to_host_bytes));
  const std::string tmp = fmt::format("{}.{}.tmp", file, ::getpid());
  {
    std::ofstream out(tmp, std::ios::trunc);
    for (const auto& l : lines) out << l << '\n';
    if (!out) {
      std::filesystem::remove(tmp, ec);
      return;
    }
  }
  std::filesystem::rename(tmp, file, ec);
  if (ec) std::filesystem::remove(tmp, ec);
}

std::string host_name() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof buf - 1) != 0) return "localhost";
  return buf;
}

}  // namespace

staged_tuning tuning_from_environment(staged_tuning t) {
  constexpr auto u = std::numeric_limits<unsigned>::max();
  t.chunk_bytes = positive_from_env("XFER_STAGED_CHUNK_BYTES", t.chunk_bytes, std::size_t{1} << 30);
  t.ring_depth = static_cast<unsigned>(positive_from_env("XFER_STAGED_RING_DEPTH", t.ring_depth, u));
  t.threads = static_cast<unsigned>(positive_from_env("XFER_STAGED_THREADS", t.threads, 256));
  // One variable for both directions: a person forcing the handoff wants it
  // the same way round both ways.
  if (const char* v = std::getenv("XFER_STAGED_HANDOFF_BYTES"); v && *v)
    t.handoff_to_device_bytes = t.handoff_to_host_bytes =
        positive_from_env("XFER_STAGED_HANDOFF_BYTES", 0, std::numeric_limits<std::size_t>::max());
  if (const char* v = std::getenv("XFER_STAGED_STREAM_STORES"); v && *v) {
    const std::string b = v;
    if (b != "0" && b != "1")
      throw std::invalid_argument(fmt::format("XFER_STAGED_STREAM_STORES={}: expected 0 or 1", b));
    t.stream_stores = b == "1";
  }
  return t;
}

std::string tuning_cache_file() {
  if (const char* f = std::getenv("XFER_STAGED_TUNING_CACHE")) return std::string(f) == "off" ? "" : f;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return fmt::format("{}/xfer/staged-tuning", x);
  if (const char* h = std::getenv("HOME"); h && *h) return fmt::format("{}/.cache/xfer/staged-tuning", h);
  return {};
}

std::string tuning_cache_key(device_step& step) {
  return fmt::format("{}/{}/{}", host_name(), step.name(), step.device_key());
}

staged_tuning tuning_for(device_step& step, const staged_calibration& calibrate) {
  std::shared_ptr<cache_entry> e;
  {
    std::lock_guard lock(cache_mutex);
    auto& slot = cache()[tuning_cache_key(step)];
    if (!slot) slot = std::make_shared<cache_entry>();
    e = slot;
  }
  // The entry's lock, not the map's: a slow calibration of one device holds
  // up no other device's, and one that throws leaves the entry to retry.
  std::lock_guard lock(e->mutex);
  if (!e->done) {
    const std::string key = tuning_cache_key(step), file = tuning_cache_file();
    std::optional<staged_tuning> t;
    if (!file.empty()) t = read_cached(file, key);
    if (!t && calibrate) {
      t = calibrate(step);
      t->validate();
      if (!file.empty()) write_cached(file, key, *t);
    }
    e->tuning = t ? *t : staged_tuning{};
    e->done = true;
  }
  return tuning_from_environment(e->tuning);
}

void forget_cached_tunings() {
  std::lock_guard lock(cache_mutex);
  cache().clear();
}

}  // namespace xfer::mem
