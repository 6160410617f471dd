#pragma once
// Many small blocks between scattered host places and scattered device
// places (issue 38): a serving engine's KV-cache offload moves thousands of
// 8 KiB to 2 MiB blocks each step, and a loop of async copies pays about
// 1.4 us per call on a PCIe Gen5 GPU before any byte moves. The block copier moves a block
// list the fastest of four ways for its block size, host memory kind and
// direction on this device:
//
//   loop    one async copy per block (what engines do today);
//   batch   all of them in one cudaMemcpyBatchAsync (CUDA 12.8+);
//   kernel  device code gathering/scattering through pinned, mapped host
//           memory (no copy engine; pinned host memory only);
//   pack    the CPU packs the blocks into a pinned staging buffer, one DMA,
//           a kernel scatters them on the device (and the reverse to the host).
//
//   auto step = xfer::cuda::make_block_step(0);
//   xfer::mem::block_copier copier(*step);
//   copier.copy({staged_direction::to_device, host, host_bytes, {dev, dev_bytes}, 16384, pairs});
//
// Thread-safe; copies run one at a time.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>
#include <xfer/mem/blocks/block_step.hpp>

namespace xfer::mem {

// One block to move: block `src` of the source array to block `dst` of the
// destination array (indices in blocks; signed as Python's int64 mapping
// is, so a negative index is refused here, once).
struct block_pair {
  std::int64_t src = 0;
  std::int64_t dst = 0;
};

// A block copy: the host array and the device array, each a whole number
// of blocks; the direction says which is the source.
struct block_job {
  staged_direction direction = staged_direction::to_device;
  void* host = nullptr;
  std::size_t host_bytes = 0;
  device_ref device{};
  std::size_t block_bytes = 0;
  std::span<const block_pair> pairs;
  // The caller's queue (a cudaStream_t of the step's device; null: none):
  // the copy's device work starts after what was queued on it before the
  // call, as the staged copier's after_queue.
  void* after_queue = nullptr;
};

// A block copy refused before anything moved: what() names the pair, the
// block and the bound in one line. An std::invalid_argument: the caller's
// mistake (Python: ValueError).
class block_error : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

enum class block_way { loop, batch, kernel, pack };
inline constexpr block_way all_block_ways[] = {block_way::loop, block_way::batch, block_way::kernel, block_way::pack};
std::string_view to_string(block_way w) noexcept;  // "loop" | "batch" | "kernel" | "pack"
// The way named `name`; throws std::invalid_argument "<what>=<name>:
// expected one of loop, batch, kernel, pack".
block_way parse_block_way(std::string_view name, std::string_view what = "way");

// A scattered block list: n pairs whose sources (of src_blocks) and
// destinations (of dst_blocks) are each drawn without repeats, by `seed`
// (the same list for the same arguments). Throws std::invalid_argument
// where n exceeds either count. The calibration's probes, the benchmarks'
// and the tests' lists.
std::vector<block_pair> scattered_block_pairs(std::size_t n, std::size_t src_blocks, std::size_t dst_blocks,
                                              std::uint64_t seed);

// Checks a job against every rule (block_error on the first broken one):
// a block size of 0, a null array, an array that is not a whole number of
// blocks, an empty list, a negative index or one beyond its array, two
// pairs writing the same destination block, arrays that overlap.
void check_block_job(const block_job& job, const block_step& step);
// The list's part of that check, for a list given before any array exists
// (the sweep's --block-pairs): every index within its side's blocks (named
// src_name, dst_name in the message), no destination block written twice.
// Throws block_error naming the pair, the block and the bound.
void check_block_pairs(std::span<const block_pair> pairs, std::size_t src_blocks, std::size_t dst_blocks,
                       std::string_view src_name = "the source array",
                       std::string_view dst_name = "the destination array");

// One way of moving a block list (a strategy): the copier holds one of
// each, and the sweep can time each alone. A mover keeps scratch state
// (index arrays, the pack way's staging and device scratch): one thread at
// a time (the copier's lock; a benchmark's own thread).
class block_mover {
 public:
  virtual ~block_mover() = default;
  virtual block_way way() const noexcept = 0;
  // Why this way cannot move `job` whose host array the device reaches as
  // `host` (empty: it can).
  virtual std::string refusal(const block_job& job, const host_access& host) const = 0;
  // Moves a checked job, returning once its bytes are at their destination.
  // Throws device_step_error.
  virtual void move(const block_job& job, const host_access& host) = 0;
};
// The way `w` over `step` (which must outlive it).
std::unique_ptr<block_mover> make_block_mover(block_way w, block_step& step);

// ---- The choice ------------------------------------------------------------
// Per (block size class, host kind, direction) the ways ranked fastest
// first, from a short calibration on this device, cached in this process
// and in the installed cache file (settings.hpp: library_inputs::blocks_cache,
// keyed_cache.hpp) under
// "<host name>/<step name>/<device key>/<direction>/<kind>/<class>", the
// ranking's scope in a result file's settings. A replay takes the replayed
// file's ranking for the key instead (no cache, no calibration). The
// class is the block size rounded down to a power of two. The rule, as the
// staged copier's tuning_for:
//   1. a way the caller forces (block_copier_options::way), else
//   2. the installed inputs' way (library_inputs::block_way: XFER_BLOCKS_WAY),
//      else
//   3. the first of the ranking this job does not refuse.
// A forced way the job refuses is a block_error naming the reason.
struct block_choice_key {
  staged_direction direction = staged_direction::to_device;
  host_block_kind kind = host_block_kind::pageable;
  std::size_t size_class = 0;  // a power of two
};
block_choice_key choice_key_for(const block_job& job, host_block_kind kind) noexcept;
std::string block_choice_cache_key(const block_step& step, const block_choice_key& key);
void forget_block_choices();  // this process's cache (the file stays), for tests

// The calibration (one per key, then cached): each way the probe does not
// refuse moves a probe list (probe_bytes of the key's class in min_blocks to
// max_blocks blocks, scattered on both sides by a fixed seed) in rounds, the
// ways interleaved and the order shuffled each round (a fixed seed),
// so drift, and what one way leaves behind for the next (a team of CPU
// threads still polling), falls on each way about as often. A probe repeats the move
// until it lasts min_probe_s, so a timer's or a launch's jitter does not
// decide. Ranked by rank_block_ways over the rounds' times. A way whose
// fastest probe is `hopeless` times the leader's median after min_rounds is
// not probed again, and the rounds stop at budget_s after min_rounds: a key
// costs each way's warm-up and first move, then at most about budget_s.
// Returns the ways fastest first; the ways refused are left out.
struct block_calibration_options {
  // 64 MiB, the total of the study's and issue 38's lists: with a smaller
  // probe the batch way's fixed cost (its first part's submission, the join)
  // weighs more than in a real list, and the choice passed it over where it
  // was faster (docs/decisions/0003-block-copier-probe-and-ways.md). Blocks
  // under 64 KiB reach max_blocks first, so their probe is unchanged.
  std::size_t probe_bytes = std::size_t{64} << 20;
  std::size_t min_blocks = 16, max_blocks = 1024;
  unsigned rounds = 7, min_rounds = 3;
  double min_probe_s = 100e-6;
  double hopeless = 1.5;
  double budget_s = 0.25;
  // The clock the probes are timed by, in seconds (empty: steady_clock).
  // Tests give one that fake movers advance.
  std::function<double()> clock;
};
std::vector<block_way> calibrate_block_ways(block_step& step, const block_choice_key& key,
                                            std::vector<block_mover*> movers,
                                            const block_calibration_options& options = {});

// One way's calibration times, seconds per move, one per round (rounds in
// order: round r of every way was taken in the same pass).
struct block_way_times {
  block_way way;
  std::vector<double> seconds;
};
// The ranking rule, on its own: by median time; where two ways' medians lie
// within their spread (their interquartile ranges overlap) they are a tie on
// time, and the one that was faster in more of the rounds both ran comes
// first (then the lower median, then the way that costs the host less:
// kernel, batch, pack, loop), so a single outlier round neither wins nor
// loses a way its place. Ways without times are left out.
std::vector<block_way> rank_block_ways(const std::vector<block_way_times>& times);

// What the choice ranks the ways for (docs/blocks.md, "Beside compute"):
//   alone           the ways' own times on an idle device: the calibration's
//                   ranking as it is;
//   beside_compute  the program keeps the device's multiprocessors busy while
//                   blocks move: the kernel way, whose device code holds them
//                   for the whole copy, goes last; the others keep the
//                   calibration's order (pack's scatter or gather is short).
// The default is alone (docs/decisions/0010-block-policy.md says why).
enum class block_policy { alone, beside_compute };
std::string_view to_string(block_policy p) noexcept;  // "alone" | "beside_compute"
// The policy named `name`; throws std::invalid_argument "<what>=<name>:
// expected alone or beside_compute".
block_policy parse_block_policy(std::string_view name, std::string_view what = "policy");
// Whether way `w` holds the multiprocessors for the whole copy (kernel).
bool holds_multiprocessors(block_way w) noexcept;
// `ranking` as `policy` orders it (above).
std::vector<block_way> ranked_for(std::vector<block_way> ranking, block_policy policy);

struct block_copier_options {
  std::optional<block_way> way;  // forces a way (over the installed inputs' way)
  // Over the installed inputs' (library_inputs::blocks_policy:
  // XFER_BLOCKS_POLICY); neither: alone.
  std::optional<block_policy> policy;
  // False: no calibration; an uncached key ranks the ways in the fixed
  // order pack, batch, kernel, loop (tests, and programs that cannot spend
  // the time).
  bool calibrate = true;
  block_calibration_options calibration{};
  // The rankings' file instead of the installed inputs' ("": none).
  std::optional<std::string> cache_file;
};

class block_copier {
 public:
  // The step must outlive the copier.
  explicit block_copier(block_step& step, block_copier_options options = {});
  ~block_copier();
  block_copier(const block_copier&) = delete;
  block_copier& operator=(const block_copier&) = delete;

  // Checks the job (block_error, nothing moved), picks the way and moves
  // the blocks, returning once they are at their destination. Returns the
  // way it used. Throws device_step_error when the device fails.
  block_way copy(const block_job& job);
  // The way copy(job) would use (calibrating the job's key if needed).
  block_way choose(const block_job& job);
  block_mover& mover(block_way w) { return *movers_[static_cast<int>(w)]; }
  block_step& step() const noexcept { return step_; }
  block_policy policy() const noexcept { return policy_; }

 private:
  block_way choose_locked(const block_job& job, const host_access& host);
  block_step& step_;
  block_copier_options options_;
  std::optional<block_way> forced_;
  block_policy policy_ = block_policy::alone;
  std::unique_ptr<block_mover> movers_[4];
  std::mutex mutex_;
  // The rankings this copier has used (as its policy orders them), by
  // (direction, kind, size class),
  // under mutex_; dropped when forget_block_choices() drops the process's.
  std::map<std::tuple<int, int, std::size_t>, std::vector<block_way>> rankings_;
  std::uint64_t rankings_generation_ = 0;
};

}  // namespace xfer::mem
