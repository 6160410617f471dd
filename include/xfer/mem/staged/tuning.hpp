#pragma once
// How the staged copier cuts a copy: chunk size, ring depth, thread count,
// and the size below which the plain API is faster. The defaults and why:
// docs/decisions/0001-staged-copier-shape.md (demoting the staging lines:
// 0002-staged-demote.md). A calibration can replace them per machine and
// device, and the environment or the caller can override any field:
// tuning_for below holds the rule.
#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>
#include <xfer/mem/staged/device_step.hpp>

namespace xfer::mem {

class device_step;

// The share of `cpus` the staged copier's threads take: three quarters. The
// copy into the staging ring is memory-bound per thread, and a few CPUs are
// left for the caller and the devices' own threads. One device's team
// (default_staged_threads) and the team several devices share
// (staging_budget, grown with the copies at once) both follow it.
constexpr unsigned staged_cpu_share(unsigned cpus) noexcept { return cpus * 3 / 4; }

// staged_cpu_share of the CPUs this process may use, from 4 to 12. Never
// fewer than 4, so the pipeline's hand-offs between threads are exercised on
// small machines too.
unsigned default_staged_threads() noexcept;

// The physical cores among `cpus` (logical CPU numbers): the CPUs that share
// a core (its hyperthreads, sysfs' <sysfs_cpu>/cpu<N>/topology/
// thread_siblings_list) count once. A CPU whose topology cannot be read
// counts as a core of its own, so without sysfs this is the CPU count.
// A shared team grows no further than a share of these: threads beyond the
// cores share a core's memory pipeline with another
// (docs/decisions/0008-shared-staging-budget.md).
unsigned physical_cores_among(const std::vector<unsigned>& cpus,
                              const std::string& sysfs_cpu = "/sys/devices/system/cpu");
// Those of the CPUs this process may use (sched_getaffinity); at least 1.
unsigned physical_cores(const std::string& sysfs_cpu = "/sys/devices/system/cpu");

struct staged_tuning {
  // One DMA's size: each staging buffer holds one chunk.
  std::size_t chunk_bytes = std::size_t{8} << 20;
  // Staging buffers in the ring. While the device drains one, the threads
  // fill the next; more buffers absorb jitter on either side.
  unsigned ring_depth = 4;
  // CPU threads copying between the caller's memory and the ring. All of
  // them work on the same chunk, each on a piece of it (piece_bytes()), so
  // a chunk is ready for its DMA after 1/threads of one thread's copy time.
  // The default follows the CPUs this process may use (default_staged_threads):
  // the CPU copy itself needs more than 4 threads to keep up with the link
  // (docs/decisions/0001-staged-copier-shape.md).
  unsigned threads = default_staged_threads();
  // Copies smaller than these go to the plain API (device_step::plain_*),
  // one size per direction: the two directions' plain copies from pageable
  // memory cost differently. The defaults are the smallest sizes from which
  // staging won against the plain copy in interleaved samples
  // (docs/decisions/0001-staged-copier-shape.md); a calibration replaces
  // them per machine.
  std::size_t handoff_to_device_bytes = std::size_t{4} << 20;
  std::size_t handoff_to_host_bytes = std::size_t{1} << 20;
  // Copy pieces with non-temporal stores (x86; memcpy elsewhere): no read
  // of each destination line first. Off: the copy engine then reads the
  // staging buffers from DRAM rather than from the cache, which cost more
  // than the stores save (docs/decisions/0002-staged-demote.md).
  // Not calibrated (nor cached): XFER_STAGED_STREAM_STORES=1 turns it on.
  bool stream_stores = false;
  // Cut each copy with a chunk chosen from its size (staged_chunk_for)
  // rather than chunk_bytes for every copy: a 16 MiB copy is then cut with
  // 4 MiB chunks and their ramps, not into 16 even 1 MiB chunks, and the
  // ring stays within the last-level cache where that is small. On by
  // default (docs/decisions/0001-staged-copier-shape.md). Not calibrated
  // (nor cached): XFER_STAGED_SIZE_CHUNKS=0 turns it off.
  bool size_chunks = true;
  // Host to device: once a thread has copied its piece into a staging
  // buffer, move the piece's lines from its core's caches to the shared
  // last-level cache (x86 CLDEMOTE; a no-op elsewhere), for copies no larger
  // than a quarter of that cache (staged_demotes). The copy engine then reads the lines
  // from the L3 instead of snooping them out of each writer's L2, where a
  // DMA that follows its chunk closely finds them. Demoting costs the
  // threads time on every line, and from some copy size (where the source
  // no longer fits the cache and the threads' copy is the limit) that costs
  // more than the engine gains: hence the size limit
  // (docs/decisions/0002-staged-demote.md). Not calibrated (nor cached):
  // XFER_STAGED_DEMOTE=0 turns it off.
  bool demote_staging = true;

  // Throws std::invalid_argument naming the field when a value is outside
  // the bounds below (min_staged_chunk_bytes and friends).
  void validate() const;
  // The handoff size for one direction.
  std::size_t handoff(bool to_device) const noexcept {
    return to_device ? handoff_to_device_bytes : handoff_to_host_bytes;
  }
  // A thread's piece of a chunk: chunk_bytes / threads, rounded up to a
  // cache line so no two threads write the same line.
  std::size_t piece_bytes() const noexcept;
  bool operator==(const staged_tuning&) const = default;
};

// How the copier cuts a copy of `bytes` into chunks of at most `chunk`:
// the offsets where chunks start, then `bytes` (so chunk i is
// [starts[i], starts[i + 1])). The first chunks ramp up (chunk/8, /4, /2)
// and the last ones ramp down again: the copy engine starts as soon as a
// small first chunk is full, and the copy ends soon after the last, small
// DMA (by arithmetic, a whole 8 MiB first fill and last DMA at 50 GB/s take
// about 0.3 ms, a fifth of a 64 MiB copy). A copy too short for both ramps
// is cut evenly at the ramp's first size.
std::vector<std::size_t> staged_chunk_starts(std::size_t bytes, std::size_t chunk);

// The ring's slots for one copy: t.ring_depth to the device, twice that to
// the host. Device to host, a deeper ring lets the engine run further ahead
// of the threads emptying its slots; to the device the extra slots lost
// (docs/decisions/0001-staged-copier-shape.md).
unsigned staged_ring_slots(const staged_tuning& t, staged_direction d) noexcept;

// The chunk a copy of `bytes` is cut with (at most t.chunk_bytes, the
// staging buffers' size). chunk_bytes unless t.size_chunks is on; then the
// largest power of two that cuts the copy into at least
// staged_chunks_per_copy chunks (4 to 8), no larger than a ring of
// t.ring_depth of them fitting in half of `llc_bytes` (where the device
// reads the ring from the cache, its bytes need never reach DRAM; the other
// half is left to the source streaming through; 0: unknown, no limit), and
// no smaller than min_size_chunk_bytes, nor larger than t.chunk_bytes.
// Four per copy leaves room for staged_chunk_starts' ramps (2.75 chunks):
// with 8 MiB chunks a 16 MiB copy is too short for them and is cut into 16
// even 1 MiB chunks. More, smaller chunks lose: each chunk costs the
// pipeline a fixed time beyond its bytes, hence the floor
// (docs/decisions/0001-staged-copier-shape.md).
inline constexpr std::size_t staged_chunks_per_copy = 4;
inline constexpr std::size_t min_size_chunk_bytes = std::size_t{256} << 10;
std::size_t staged_chunk_for(std::size_t bytes, const staged_tuning& t, std::size_t llc_bytes);

// Whether a host-to-device copy of `bytes` demotes its staging lines:
// t.demote_staging and `bytes` no larger than a quarter of `llc_bytes`;
// where the cache's size is unknown (0), no larger than 64 MiB, the largest
// copy measured not to lose by it (docs/decisions/0002-staged-demote.md).
inline constexpr std::size_t demote_llc_fraction = 4;
inline constexpr std::size_t demote_limit_unknown_llc = std::size_t{64} << 20;
bool staged_demotes(std::size_t bytes, const staged_tuning& t, std::size_t llc_bytes) noexcept;

// How the copier cuts one copy of `bytes` in direction `d` whose ring may
// take `cache_bytes` of the cache: staged_chunk_for over the direction's
// ring (staged_ring_slots), then staged_chunk_starts. The copier's own cut
// and the CUDA batch route's (which is compared with it) are this function.
std::vector<std::size_t> staged_copy_starts(std::size_t bytes, const staged_tuning& t, staged_direction d,
                                            std::size_t cache_bytes);

// The last-level cache's size from sysfs (cpu0's largest unified cache),
// read once; 0 where the system does not say.
std::size_t last_level_cache_bytes() noexcept;

// ---- The one rule for a step's tuning (issue 35) ----------------------------
// Every caller asks tuning_for: the sweep's staged route, the CUDA batch
// route (its chunk), a staged_copier made without a tuning, the vadd study
// and the Python Copier. So a variable or an argument means the same
// wherever it is given:
//
//   1. The machine's tuning for the step's device, under the key
//      tuning_cache_key(step): the one this process already has; else the
//      installed cache file's (settings.hpp: library_inputs::staged_cache,
//      an entry written on this machine, keyed_cache.hpp); else, when
//      `calibrate` is given, what it returns (written to the file for the
//      next program); else libxfer's defaults. No calibration runs when the
//      overrides fix every calibrated field (chunk, ring depth, threads,
//      handoff): nothing would be left for it to choose (CI pins small
//      chunks that way, fast). A replay (library_inputs::replay_file) takes
//      every field from the replayed file instead: no cache, no calibration.
//   2. Each field the installed inputs fix (library_inputs::staged: the
//      front door's XFER_STAGED_* variables) replaces its own.
//   3. Each override the caller passes (`overrides`: the Python Copier's
//      keyword arguments) replaces its own field, over those.
//
// Every override is parsed and checked against the bounds below before any
// calibration runs; one that is not an integer within them throws
// std::invalid_argument naming the variable or argument, the value and the
// bounds ("XFER_STAGED_RING_DEPTH=0: expected an integer from 1 to 1024").
// Each field resolved is recorded in the settings log under the key, with
// its source (record_setting). Thread-safe; calibrate() runs once per key
// even when several threads ask. The file is an optimisation: one that
// cannot be read or written is ignored, and an entry that cannot be used is
// ignored with a notice.

// The bounds staged_tuning::validate() and every override share.
// The smallest chunk is one cache line, the smallest piece a thread copies
// (piece_bytes): smaller chunks only multiply DMAs, and under 8 bytes the
// chunk schedule's ramp steps would round to 0. Above 1 GiB a chunk (one
// pinned staging buffer) is a unit mistake, as is a ring deeper than 1024
// buffers or more than 256 threads.
inline constexpr std::size_t min_staged_chunk_bytes = 64;
inline constexpr std::size_t max_staged_chunk_bytes = std::size_t{1} << 30;
inline constexpr unsigned max_staged_ring_depth = 1024;
inline constexpr unsigned max_staged_threads = 256;

enum class staged_field { chunk_bytes, ring_depth, threads, handoff_bytes, stream_stores, size_chunks, demote_staging };
// One override as given: its field, its name where it came from (for
// messages: "XFER_STAGED_THREADS", "threads") and its text (a decimal
// integer; "0" or "1" for stream_stores, size_chunks and demote_staging).
struct staged_override {
  staged_field field;
  std::string name;
  std::string value;
};

using staged_calibration = std::function<staged_tuning(device_step&)>;
// cache_file: the caller's file instead of the installed inputs' ("": none).
staged_tuning tuning_for(device_step& step, const staged_calibration& calibrate = {},
                         const std::vector<staged_override>& overrides = {},
                         const std::optional<std::string>& cache_file = std::nullopt);

// `base` with `overrides` applied in order (a later one for the same field
// wins); throws std::invalid_argument as described above.
staged_tuning apply_staged_overrides(staged_tuning base, const std::vector<staged_override>& overrides);
// Every field, and the variable that overrides it (XFER_STAGED_CHUNK_BYTES...;
// read by the front door, settings.hpp).
inline constexpr staged_field all_staged_fields[] = {
    staged_field::chunk_bytes,   staged_field::ring_depth,  staged_field::threads,       staged_field::handoff_bytes,
    staged_field::stream_stores, staged_field::size_chunks, staged_field::demote_staging};
const char* staged_variable(staged_field f) noexcept;
// "<host name>/<step name>/<device key>": the cache's key, and the scope of
// the step's settings in a result file.
std::string tuning_cache_key(device_step& step);
void forget_cached_tunings();  // this process's cache (the file stays), for tests

// A short calibration: times round trips of probe_bytes through the copier
// for each chunk size and thread count, keeps the fastest (the defaults
// unless it was candidate_margin faster: staged_candidate_choice), then finds per
// direction the size from which staging beats the plain API (handoff: the
// smallest probed size from which the staged copy was faster at every
// larger probed size).
// Stops trying candidates once budget_s is spent (keeping the best so far).
// Throws device_step_error / staged_error when the device fails.
struct staged_calibration_options {
  std::size_t probe_bytes = std::size_t{64} << 20;
  std::vector<std::size_t> chunk_sizes{std::size_t{2} << 20, std::size_t{4} << 20, std::size_t{8} << 20,
                                       std::size_t{16} << 20};
  // Counts over the CPUs this process may use are left out (but the
  // defaults and the first count are always tried; the defaults first).
  std::vector<unsigned> thread_counts{4, 8, 12};
  unsigned ring_depth = 4;
  // Every power of two from 1 MiB: with gaps between the probed sizes, one
  // size that missed the margin handed everything up to the next probed size
  // to the plain copy, though staging was far faster there
  // (docs/decisions/0001-staged-copier-shape.md).
  std::vector<std::size_t> handoff_sizes{std::size_t{64} << 10, std::size_t{256} << 10, std::size_t{1} << 20,
                                         std::size_t{2} << 20,  std::size_t{4} << 20,   std::size_t{8} << 20,
                                         std::size_t{16} << 20};
  // Staging takes over a size only where it won by this fraction: the
  // handoff errs towards the plain API, which is never slower than itself.
  double handoff_margin = 0.10;
  // Another chunk and thread count replace the defaults only where their
  // round trip was this fraction faster. At the 64 MiB probe two chunk
  // sizes can tie while the larger is faster on larger copies, and the
  // choice holds for every size: without a margin a tie went to a smaller
  // chunk (docs/decisions/0001-staged-copier-shape.md).
  double candidate_margin = 0.10;
  double budget_s = 1.5;
};
staged_tuning calibrate_staged(device_step& step, const staged_calibration_options& options = {});

// Which of the candidates' round trips (seconds; infinity: not timed) the
// calibration keeps: the fastest, unless `defaults` (an index into
// `seconds`, or seconds.size() where the defaults were not a candidate)
// was timed and the fastest was not `margin` faster than it. Throws
// std::invalid_argument when no candidate was timed.
std::size_t staged_candidate_choice(const std::vector<double>& seconds, std::size_t defaults, double margin);

}  // namespace xfer::mem
