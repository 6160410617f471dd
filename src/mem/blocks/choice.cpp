// The block copier's choice of a way (block_copier.hpp): a ranking per
// (direction, host kind, block size class), calibrated once per machine and
// device and kept in this process and in a file beside the staged copier's
// tuning cache, under the same kind of key (tuning.hpp).
#include <unistd.h>

#include <algorithm>
#include <random>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <limits>
#include <map>
#include <mutex>
#include <sstream>
#include <vector>
#include <fmt/format.h>
#include <xfer/mem/blocks/block_copier.hpp>
#include <xfer/mem/files.hpp>
#include <xfer/mem/staged/tuning.hpp>

#include "ranking.hpp"

namespace xfer::mem {
namespace {

std::mutex choices_mutex;
// Bumped by forget_block_choices, so a copier's own copies of rankings
// (block_copier.cpp) are dropped with the process's.
std::atomic<std::uint64_t> choices_generation{0};
std::map<std::string, std::vector<block_way>>& choices() {
  static std::map<std::string, std::vector<block_way>> c;
  return c;
}

std::string this_host() {
  char buf[256] = {};
  return ::gethostname(buf, sizeof buf - 1) == 0 ? std::string(buf) : std::string("localhost");
}

// "<key>\t<way> <way> ...": the last well-formed line for the key wins; a
// line naming an unknown way (a later version's) is skipped.
std::optional<std::vector<block_way>> read_ranking(const std::string& file, const std::string& key) {
  std::istringstream in(read_cache(file).value_or(""));
  std::optional<std::vector<block_way>> found;
  for (std::string line; std::getline(in, line);) {
    if (line.size() <= key.size() || line.compare(0, key.size(), key) != 0 || line[key.size()] != '\t') continue;
    std::istringstream words(line.substr(key.size() + 1));
    std::vector<block_way> ranking;
    bool ok = true;
    for (std::string w; words >> w;) {
      try {
        ranking.push_back(parse_block_way(w));
      } catch (const std::invalid_argument&) {
        ok = false;
      }
    }
    if (ok && !ranking.empty()) found = ranking;
  }
  return found;
}

// The key's line replaced, whole or not at all (xfer/mem/files.hpp): a
// program reading at the same time sees the old file or the new, and a cache
// that is not a regular file is left alone.
void write_ranking(const std::string& file, const std::string& key, const std::vector<block_way>& ranking) {
  std::string text;
  {
    std::istringstream in(read_cache(file).value_or(""));
    for (std::string line; std::getline(in, line);)
      if (!(line.size() > key.size() && line.compare(0, key.size(), key) == 0 && line[key.size()] == '\t'))
        text += line + '\n';
  }
  text += key + '\t';
  for (std::size_t i = 0; i < ranking.size(); ++i) text += fmt::format("{}{}", i ? " " : "", to_string(ranking[i]));
  text += '\n';
  write_cache(file, text);
}

using clock_type = std::chrono::steady_clock;

}  // namespace

std::string block_choice_cache_key(const block_step& step, const block_choice_key& key) {
  return fmt::format("{}/{}/{}/{}/{}/{}", this_host(), step.name(), step.device_key(),
                     key.direction == staged_direction::to_device ? "h2d" : "d2h", to_string(key.kind),
                     key.size_class);
}

std::string block_choice_file() {
  if (const char* f = std::getenv("XFER_BLOCKS_CACHE")) return cache_turned_off(f) ? "" : f;
  const std::string staged = tuning_cache_file();
  if (staged.empty()) return {};
  // "-5": the rankings made with a 64 MiB probe; a file ranking by 32 MiB
  // probes ("-4"), the four-stream batch ("-3"), the one-stream batch ("-2",
  // the rounds' rule of rank.cpp) or the first rule's (no suffix) is not read.
  return (std::filesystem::path(staged).parent_path() / "block-ways-5").string();
}

void forget_block_choices() {
  std::lock_guard lock(choices_mutex);
  choices().clear();
  ++choices_generation;
}

std::uint64_t block_choices_generation() noexcept { return choices_generation.load(); }

std::optional<block_way> block_way_from_environment() {
  const char* v = std::getenv("XFER_BLOCKS_WAY");
  if (!v || !*v) return std::nullopt;
  return parse_block_way(v, "XFER_BLOCKS_WAY");
}

std::vector<block_way> calibrate_block_ways(block_step& step, const block_choice_key& key,
                                            std::vector<block_mover*> movers, const block_calibration_options& o) {
  const std::size_t block = std::max<std::size_t>(key.size_class, 1);
  const std::size_t blocks = std::clamp(o.probe_bytes / block, o.min_blocks, o.max_blocks);
  const std::size_t bytes = blocks * block;
  // Host memory of the key's kind: the step's pinned memory, or pageable
  // memory touched once (as a caller's would be).
  // The device memory first: allocating makes the step's device current,
  // which pinning needs (block_step.hpp).
  const device_ref dev = step.allocate(bytes);
  struct free_device {
    block_step& s;
    device_ref d;
    ~free_device() { s.deallocate(d); }
  } held_dev{step, dev};
  host_resource& pinned = step.staging_memory();
  std::vector<unsigned char> pageable;
  void* host = nullptr;
  if (key.kind == host_block_kind::pinned) {
    host = pinned.allocate(bytes, 4096);
  } else {
    pageable.assign(bytes, 0x5A);
    host = pageable.data();
  }
  struct release {
    host_resource* r;
    void* p;
    std::size_t bytes;
    ~release() {
      if (r) r->deallocate(p, bytes, 4096);
    }
  } held{key.kind == host_block_kind::pinned ? &pinned : nullptr, host, bytes};

  // Both sides scattered by a fixed seed: the same list every time.
  const auto pairs = scattered_block_pairs(blocks, blocks, blocks, 38);
  const block_job job{key.direction, host, bytes, dev, block, pairs, nullptr};
  const host_access access = step.access(host, bytes);

  std::vector<block_mover*> ways;
  for (block_mover* m : movers)
    if (m->refusal(job, access).empty()) ways.push_back(m);
  if (ways.size() < 2) {  // nothing to rank
    std::vector<block_way> ranking;
    for (block_mover* m : ways) ranking.push_back(m->way());
    return ranking;
  }
  const std::function<double()> now = o.clock ? o.clock : [] {
    return std::chrono::duration<double>(clock_type::now().time_since_epoch()).count();
  };
  // Warm-up (staging pinned, kernels loaded), then one timed move: how many
  // moves make a probe of at least min_probe_s.
  std::vector<unsigned> moves(ways.size(), 1);
  for (std::size_t i = 0; i < ways.size(); ++i) {
    ways[i]->move(job, access);
    const double t0 = now();
    ways[i]->move(job, access);
    const double once = now() - t0;
    if (once > 0 && once < o.min_probe_s)
      moves[i] = static_cast<unsigned>(std::min(1024.0, std::ceil(o.min_probe_s / once)));
  }
  std::vector<block_way_times> times(ways.size());
  std::vector<std::size_t> live(ways.size());
  for (std::size_t i = 0; i < ways.size(); ++i) {
    times[i].way = ways[i]->way();
    live[i] = i;
  }
  const double start = now();
  const unsigned rounds = std::max(1u, o.rounds), min_rounds = std::clamp(o.min_rounds, 1u, rounds);
  // The order is shuffled each round (a fixed seed): what a way leaves
  // behind (the pack way's threads poll for 200 us after a copy; CPU writes
  // a DMA then takes back from the caches) falls on each way about as often.
  // A rotation would keep each way behind the same one: the block study's
  // auto column, always right after pack, measured pack's wake at 1ce24c1
  // (docs/results/nvidia-h200/blocks-1ce24c1/).
  std::mt19937 order_rng(38);
  std::vector<std::size_t> order;
  for (unsigned r = 0; r < rounds && !live.empty(); ++r) {
    order = live;
    std::shuffle(order.begin(), order.end(), order_rng);
    for (const std::size_t i : order) {
      const double t0 = now();
      for (unsigned n = 0; n < moves[i]; ++n) ways[i]->move(job, access);
      times[i].seconds.push_back((now() - t0) / moves[i]);
    }
    if (r + 1 < min_rounds) continue;
    // A way that cannot come near the leader is left out of the next
    // rounds (its probes are the slowest, and spent on no decision).
    double leader = std::numeric_limits<double>::infinity();
    for (std::size_t i : live) {
      std::vector<double> s = times[i].seconds;
      std::nth_element(s.begin(), s.begin() + s.size() / 2, s.end());
      leader = std::min(leader, s[s.size() / 2]);
    }
    std::erase_if(live, [&](std::size_t i) {
      return *std::min_element(times[i].seconds.begin(), times[i].seconds.end()) > o.hopeless * leader;
    });
    if (live.size() < 2 || now() - start > o.budget_s) break;
  }
  return rank_block_ways(times);
}

// The ranking for a key: this process's, the file's, else calibrated (and
// written) or the fixed order. Under the copier's lock (one calibration
// per copier at a time); the map's lock guards the map alone.
std::vector<block_way> block_ranking(block_step& step, const block_choice_key& key, bool calibrate,
                                     const std::vector<block_mover*>& movers, const block_calibration_options& o) {
  const std::string k = block_choice_cache_key(step, key);
  {
    std::lock_guard lock(choices_mutex);
    if (auto it = choices().find(k); it != choices().end()) return it->second;
  }
  const std::string file = block_choice_file();
  std::optional<std::vector<block_way>> ranking;
  if (!file.empty()) ranking = read_ranking(file, k);
  if (!ranking && calibrate) {
    ranking = calibrate_block_ways(step, key, movers, o);
    if (ranking->empty()) ranking.reset();
    else if (!file.empty()) write_ranking(file, k, *ranking);
  }
  // Uncalibrated: pack first (one DMA and one launch whatever the count;
  // any host memory), the loop last.
  if (!ranking) ranking = {{block_way::pack, block_way::batch, block_way::kernel, block_way::loop}};
  std::lock_guard lock(choices_mutex);
  return choices().emplace(k, *ranking).first->second;
}

}  // namespace xfer::mem
