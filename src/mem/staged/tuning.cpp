#include <sched.h>
#include <unistd.h>

#include <algorithm>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>
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
#include <xfer/mem/files.hpp>
#include <xfer/mem/numbers.hpp>
#include <xfer/mem/os.hpp>
#include <xfer/mem/settings.hpp>
#include <xfer/mem/staged/tuning.hpp>

#include "../keyed_cache.hpp"

namespace xfer::mem {

namespace {

// The CPUs this process may use; none where the kernel does not say.
std::vector<unsigned> affinity_cpus() {
  cpu_set_t set;
  std::vector<unsigned> cpus;
  if (::sched_getaffinity(0, sizeof set, &set) != 0) return cpus;
  for (unsigned c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &set)) cpus.push_back(c);
  return cpus;
}

}  // namespace

unsigned default_staged_threads() noexcept { return std::clamp(staged_cpu_share(usable_cpu_count()), 4u, 12u); }

unsigned physical_cores_among(const std::vector<unsigned>& cpus, const std::string& sysfs_cpu) {
  // A core's hyperthreads list the same siblings; a CPU with no readable
  // list is keyed by its own number (no list has a '#').
  std::set<std::string> cores;
  for (unsigned c : cpus) {
    std::ifstream in(fmt::format("{}/cpu{}/topology/thread_siblings_list", sysfs_cpu, c));
    std::string siblings;
    if (!(in >> siblings) || siblings.empty()) siblings = fmt::format("#{}", c);
    cores.insert(siblings);
  }
  return static_cast<unsigned>(cores.size());
}

unsigned physical_cores(const std::string& sysfs_cpu) {
  return std::max(1u, physical_cores_among(affinity_cpus(), sysfs_cpu));
}

void staged_tuning::validate() const {
  if (chunk_bytes < min_staged_chunk_bytes || chunk_bytes > max_staged_chunk_bytes)
    throw std::invalid_argument(fmt::format("staged tuning: chunk_bytes {} is outside {} to {} (1 GiB)", chunk_bytes,
                                            min_staged_chunk_bytes, max_staged_chunk_bytes));
  if (ring_depth == 0 || ring_depth > max_staged_ring_depth)
    throw std::invalid_argument(
        fmt::format("staged tuning: ring_depth {} is outside 1 to {}", ring_depth, max_staged_ring_depth));
  if (threads == 0 || threads > max_staged_threads)
    throw std::invalid_argument(fmt::format("staged tuning: threads {} is outside 1 to {}", threads, max_staged_threads));
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
  for (std::size_t r = chunk / 8; r > 0 && r < chunk; r *= 2)
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

std::size_t floor_pow2(std::size_t n) {
  std::size_t p = 1;
  while (p <= n / 2) p *= 2;
  return p;
}

}  // namespace

std::size_t staged_chunk_for(std::size_t bytes, const staged_tuning& t, std::size_t llc_bytes) {
  if (!t.size_chunks) return t.chunk_bytes;
  std::size_t chunk = floor_pow2(std::max<std::size_t>(bytes / staged_chunks_per_copy, 1));
  if (llc_bytes > 0) chunk = std::min(chunk, floor_pow2(std::max<std::size_t>(llc_bytes / 2 / t.ring_depth, 1)));
  return std::min(std::max(chunk, min_size_chunk_bytes), t.chunk_bytes);
}

unsigned staged_ring_slots(const staged_tuning& t, staged_direction d) noexcept {
  return d == staged_direction::to_host ? 2 * t.ring_depth : t.ring_depth;
}

std::vector<std::size_t> staged_copy_starts(std::size_t bytes, const staged_tuning& t, staged_direction d,
                                            std::size_t cache_bytes) {
  staged_tuning cut = t;
  cut.ring_depth = staged_ring_slots(t, d);
  return staged_chunk_starts(bytes, staged_chunk_for(bytes, cut, cache_bytes));
}

bool staged_demotes(std::size_t bytes, const staged_tuning& t, std::size_t llc_bytes) noexcept {
  return t.demote_staging && bytes <= (llc_bytes > 0 ? llc_bytes / demote_llc_fraction : demote_limit_unknown_llc);
}

std::size_t last_level_cache_bytes() noexcept {
  static const std::size_t bytes = [] {
    std::size_t best = 0;
    int best_level = 0;
    for (int i = 0; i < 16; ++i) {
      const std::string dir = fmt::format("/sys/devices/system/cpu/cpu0/cache/index{}/", i);
      std::ifstream level_in(dir + "level"), type_in(dir + "type"), size_in(dir + "size");
      int level = 0;
      std::string type;
      std::size_t size = 0;
      char unit = 0;
      if (!(level_in >> level) || !(type_in >> type) || !(size_in >> size)) continue;
      size_in >> unit;  // sysfs writes "32768K"; a bare number is bytes
      if (unit == 'K') size <<= 10;
      else if (unit == 'M') size <<= 20;
      else if (unit == 'G') size <<= 30;
      if (type == "Unified" && level >= best_level) best = size, best_level = level;
    }
    return best;
  }();
  return bytes;
}

namespace {

// Not std::call_once: where the calibration throws, call_once must leave
// the flag unset through an exception unwinding pthread_once, which hangs
// under ThreadSanitizer (and did on older glibc, GCC bug 66146).
struct cache_entry {
  std::mutex mutex;
  bool done = false;
  staged_tuning tuning;
  setting_source source = setting_source::default_value;
  std::string origin;
};

std::mutex cache_mutex;
std::map<std::string, std::shared_ptr<cache_entry>>& cache() {
  static std::map<std::string, std::shared_ptr<cache_entry>> c;
  return c;
}

// The cache file (keyed_cache.hpp), schema 3: per key
// "<chunk> <depth> <threads> <handoff to device> <handoff to host>".
// 3: the layout of 2, chosen with the calibration's candidate margin; an
// entry chosen without it is calibrated again.
constexpr int tuning_cache_schema = 3;

keyed_cache tuning_cache(const library_inputs& in) { return {in.staged_cache, "staged-tuning", tuning_cache_schema}; }

std::string machine_of(const device_step& step) {
  const std::string d = step.driver();
  return fmt::format("{}; {}", cpu_model(), d.empty() ? "no driver" : d);
}

std::optional<staged_tuning> read_cached(const keyed_cache& c, const std::string& key, const std::string& machine) {
  const auto text = read_entry(c, key, machine);
  if (!text) return std::nullopt;
  std::istringstream fields(*text);
  staged_tuning t;
  std::string rest;
  if (!(fields >> t.chunk_bytes >> t.ring_depth >> t.threads >> t.handoff_to_device_bytes >>
        t.handoff_to_host_bytes) ||
      (fields >> rest)) {
    entry_unusable(c, key, "does not parse");
    return std::nullopt;
  }
  try {
    t.validate();
  } catch (const std::invalid_argument& e) {
    entry_unusable(c, key, e.what());  // a hand-edited or damaged line: calibrate again
    return std::nullopt;
  }
  return t;
}

void write_cached(const keyed_cache& c, const std::string& key, const std::string& machine, const staged_tuning& t) {
  write_entry(c, key, machine,
              fmt::format("{} {} {} {} {}", t.chunk_bytes, t.ring_depth, t.threads, t.handoff_to_device_bytes,
                          t.handoff_to_host_bytes));
}

std::string host_name() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof buf - 1) != 0) return "localhost";
  return buf;
}

// Step 1 of the rule (tuning.hpp): this process's, the file's, the
// calibration's or the defaults, with where it came from.
struct machine_result {
  staged_tuning tuning;
  setting_source source = setting_source::default_value;
  std::string origin;
};

machine_result machine_tuning(device_step& step, const staged_calibration& calibrate, const library_inputs& in,
                              const std::optional<std::string>& cache_file) {
  const std::string key = tuning_cache_key(step);
  std::shared_ptr<cache_entry> e;
  {
    std::lock_guard lock(cache_mutex);
    auto& slot = cache()[key];
    if (!slot) slot = std::make_shared<cache_entry>();
    e = slot;
  }
  // The entry's lock, not the map's: a slow calibration of one device holds
  // up no other device's, and one that throws leaves the entry to retry.
  std::lock_guard lock(e->mutex);
  if (e->done) return {e->tuning, e->source, e->origin};
  keyed_cache file = tuning_cache(in);
  if (cache_file) file.file = *cache_file;
  const std::string machine = machine_of(step);
  machine_result r;
  if (auto t = read_cached(file, key, machine)) {
    r = {*t, setting_source::cache, file.file};
  } else if (calibrate) {
    r.tuning = calibrate(step);
    r.tuning.validate();
    r.source = setting_source::calibration;
    write_cached(file, key, machine, r.tuning);
  }
  e->tuning = r.tuning;
  e->source = r.source;
  e->origin = r.origin;
  e->done = true;
  return r;
}

// The fields as a result file records them (config.settings), by name.
struct recorded_field {
  const char* name;
  bool calibrated;  // chosen by the calibration (and cached), not only a default
};
constexpr recorded_field recorded_fields[] = {
    {"chunk_bytes", true},   {"ring_depth", true},    {"threads", true},        {"handoff_to_device_bytes", true},
    {"handoff_to_host_bytes", true}, {"stream_stores", false}, {"size_chunks", false}, {"demote_staging", false},
};

std::uint64_t field_value(const staged_tuning& t, std::string_view name) {
  if (name == "chunk_bytes") return t.chunk_bytes;
  if (name == "ring_depth") return t.ring_depth;
  if (name == "threads") return t.threads;
  if (name == "handoff_to_device_bytes") return t.handoff_to_device_bytes;
  if (name == "handoff_to_host_bytes") return t.handoff_to_host_bytes;
  if (name == "stream_stores") return t.stream_stores;
  if (name == "size_chunks") return t.size_chunks;
  return t.demote_staging;
}

// Sets a field from a replayed value, bounded as its override is.
void set_field(staged_tuning& t, std::string_view name, const std::string& text, const std::string& what) {
  if (name == "handoff_to_device_bytes" || name == "handoff_to_host_bytes") {
    const auto n = parse_count(text, what, 0, std::numeric_limits<std::size_t>::max());
    (name == "handoff_to_device_bytes" ? t.handoff_to_device_bytes : t.handoff_to_host_bytes) = n;
    return;
  }
  const staged_field f = name == "chunk_bytes"     ? staged_field::chunk_bytes
                         : name == "ring_depth"    ? staged_field::ring_depth
                         : name == "threads"       ? staged_field::threads
                         : name == "stream_stores" ? staged_field::stream_stores
                         : name == "size_chunks"   ? staged_field::size_chunks
                                                   : staged_field::demote_staging;
  t = apply_staged_overrides(t, {{f, what, text}});
}

// The fields an override sets (the handoff: both directions).
bool overrides_field(const staged_override& o, std::string_view name) {
  switch (o.field) {
    case staged_field::chunk_bytes: return name == "chunk_bytes";
    case staged_field::ring_depth: return name == "ring_depth";
    case staged_field::threads: return name == "threads";
    case staged_field::handoff_bytes: return name == "handoff_to_device_bytes" || name == "handoff_to_host_bytes";
    case staged_field::stream_stores: return name == "stream_stores";
    case staged_field::size_chunks: return name == "size_chunks";
    case staged_field::demote_staging: return name == "demote_staging";
  }
  return false;
}

}  // namespace

std::string tuning_cache_key(device_step& step) {
  return fmt::format("{}/{}/{}", host_name(), step.name(), step.device_key());
}

staged_tuning tuning_for(device_step& step, const staged_calibration& calibrate,
                         const std::vector<staged_override>& overrides, const std::optional<std::string>& cache_file) {
  const auto in = current_inputs();
  // Every override checked first: a bad value fails before a calibration
  // spends a second and a half.
  std::vector<staged_override> all = in->staged;
  all.insert(all.end(), overrides.begin(), overrides.end());
  (void)apply_staged_overrides(staged_tuning{}, all);
  const auto fixed = [&](staged_field f) {
    return std::any_of(all.begin(), all.end(), [&](const staged_override& o) { return o.field == f; });
  };
  const bool nothing_to_calibrate = fixed(staged_field::chunk_bytes) && fixed(staged_field::ring_depth) &&
                                    fixed(staged_field::threads) && fixed(staged_field::handoff_bytes);
  const std::string key = tuning_cache_key(step);
  std::vector<setting> record;
  staged_tuning t;
  if (!in->replay_file.empty()) {
    // A replay: the file's values, no cache and no calibration.
    bool missing = false;
    for (const auto& f : recorded_fields) {
      const setting* s = replayed(*in, "staged", key, f.name);
      if (s) set_field(t, f.name, s->value, fmt::format("staged {} in {}", f.name, in->replay_file));
      missing = missing || !s;
      record.push_back({"staged", key, f.name, "", s ? setting_source::replay : setting_source::default_value,
                        s ? in->replay_file : ""});
    }
    if (missing)
      record_notice(fmt::format("replayed file {} has no staged settings for {}: libxfer's defaults where it has none",
                                in->replay_file, key));
  } else {
    const machine_result m =
        machine_tuning(step, nothing_to_calibrate ? staged_calibration{} : calibrate, *in, cache_file);
    t = m.tuning;
    for (const auto& f : recorded_fields)
      record.push_back({"staged", key, f.name, "", f.calibrated ? m.source : setting_source::default_value,
                        f.calibrated ? m.origin : ""});
  }
  t = apply_staged_overrides(t, all);
  for (std::size_t i = 0; i < all.size(); ++i)
    for (setting& s : record)
      if (overrides_field(all[i], s.name)) {
        s.source = i < in->staged.size() ? setting_source::environment : setting_source::argument;
        s.origin = all[i].name;
      }
  for (setting& s : record) {
    s.value = fmt::format("{}", field_value(t, s.name));
    record_setting(std::move(s));
  }
  return t;
}

namespace {

struct field_info {
  staged_field field;
  const char* variable;
  std::uint64_t min, max;
};
constexpr field_info fields[] = {
    {staged_field::chunk_bytes, "XFER_STAGED_CHUNK_BYTES", min_staged_chunk_bytes, max_staged_chunk_bytes},
    {staged_field::ring_depth, "XFER_STAGED_RING_DEPTH", 1, max_staged_ring_depth},
    {staged_field::threads, "XFER_STAGED_THREADS", 1, max_staged_threads},
    // Positive: a forced handoff of 0 would be "stage everything", which
    // only the code's own tuning asks for.
    {staged_field::handoff_bytes, "XFER_STAGED_HANDOFF_BYTES", 1, std::numeric_limits<std::size_t>::max()},
    {staged_field::stream_stores, "XFER_STAGED_STREAM_STORES", 0, 1},
    {staged_field::size_chunks, "XFER_STAGED_SIZE_CHUNKS", 0, 1},
    {staged_field::demote_staging, "XFER_STAGED_DEMOTE", 0, 1},
};

// Digits only (no sign, no suffix, no spaces), within [min, max] (xfer/mem/numbers.hpp).
std::uint64_t parse_override(const staged_override& o) {
  const field_info& f = fields[static_cast<int>(o.field)];
  return parse_count(o.value, o.name, f.min, f.max);
}

}  // namespace

const char* staged_variable(staged_field f) noexcept { return fields[static_cast<int>(f)].variable; }

staged_tuning apply_staged_overrides(staged_tuning t, const std::vector<staged_override>& overrides) {
  for (const auto& o : overrides) {
    const std::uint64_t n = parse_override(o);
    switch (o.field) {
      case staged_field::chunk_bytes: t.chunk_bytes = static_cast<std::size_t>(n); break;
      case staged_field::ring_depth: t.ring_depth = static_cast<unsigned>(n); break;
      case staged_field::threads: t.threads = static_cast<unsigned>(n); break;
      // One value for both directions: a person forcing the handoff wants it
      // the same way round both ways.
      case staged_field::handoff_bytes: t.handoff_to_device_bytes = t.handoff_to_host_bytes = n; break;
      case staged_field::stream_stores: t.stream_stores = n == 1; break;
      case staged_field::size_chunks: t.size_chunks = n == 1; break;
      case staged_field::demote_staging: t.demote_staging = n == 1; break;
    }
  }
  return t;
}

void forget_cached_tunings() {
  std::lock_guard lock(cache_mutex);
  cache().clear();
}

}  // namespace xfer::mem
