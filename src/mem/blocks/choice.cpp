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
#include <xfer/mem/settings.hpp>
#include <xfer/mem/staged/tuning.hpp>

#include "../keyed_cache.hpp"

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

// The cache file (keyed_cache.hpp): per key the ways, fastest first,
// "<way> <way> ...". A change to the probe, the ranking rule or the batch
// way's cut bumps the schema, so no ranking an earlier rule made is reused
// (docs/decisions/0003-block-copier-probe-and-ways.md).
constexpr int block_cache_schema = 6;

keyed_cache block_cache(const library_inputs& in) { return {in.blocks_cache, "block-ways", block_cache_schema}; }

std::string machine_of(const block_step& step) {
  const std::string d = step.driver();
  return fmt::format("{}; {}", cpu_model(), d.empty() ? "no driver" : d);
}

std::string ranking_text(const std::vector<block_way>& ranking) {
  std::string text;
  for (std::size_t i = 0; i < ranking.size(); ++i) text += fmt::format("{}{}", i ? " " : "", to_string(ranking[i]));
  return text;
}

// A ranking's words; none where one is not a way (`what` names it in the throw).
std::vector<block_way> parse_ranking(const std::string& text, std::string_view what) {
  std::istringstream words(text);
  std::vector<block_way> ranking;
  for (std::string w; words >> w;) ranking.push_back(parse_block_way(w, what));
  if (ranking.empty()) throw std::invalid_argument(fmt::format("{}: no way named", what));
  return ranking;
}

std::optional<std::vector<block_way>> read_ranking(const keyed_cache& c, const std::string& key,
                                                   const std::string& machine) {
  const auto text = read_entry(c, key, machine);
  if (!text) return std::nullopt;
  try {
    return parse_ranking(*text, "way");
  } catch (const std::invalid_argument& e) {
    entry_unusable(c, key, e.what());
    return std::nullopt;
  }
}

using clock_type = std::chrono::steady_clock;

}  // namespace

std::string block_choice_cache_key(const block_step& step, const block_choice_key& key) {
  return fmt::format("{}/{}/{}/{}/{}/{}", this_host(), step.name(), step.device_key(),
                     key.direction == staged_direction::to_device ? "h2d" : "d2h", to_string(key.kind),
                     key.size_class);
}

void forget_block_choices() {
  std::lock_guard lock(choices_mutex);
  choices().clear();
  ++choices_generation;
}

std::uint64_t block_choices_generation() noexcept { return choices_generation.load(); }

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
  // A rotation would keep each way behind the same one and measure its
  // predecessor's wake (docs/decisions/0003-block-copier-probe-and-ways.md).
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
                                     const std::vector<block_mover*>& movers, const block_calibration_options& o,
                                     const std::optional<std::string>& cache_file) {
  const std::string k = block_choice_cache_key(step, key);
  {
    std::lock_guard lock(choices_mutex);
    if (auto it = choices().find(k); it != choices().end()) return it->second;
  }
  const auto in = current_inputs();
  std::optional<std::vector<block_way>> ranking;
  setting record{"blocks", k, "ranking", "", setting_source::default_value, ""};
  if (!in->replay_file.empty()) {
    // A replay: the file's ranking, no cache and no calibration.
    if (const setting* s = replayed(*in, "blocks", k, "ranking")) {
      ranking = parse_ranking(s->value, fmt::format("blocks ranking in {}", in->replay_file));
      record.source = setting_source::replay;
      record.origin = in->replay_file;
    }
  } else {
    keyed_cache file = block_cache(*in);
    if (cache_file) file.file = *cache_file;
    const std::string machine = machine_of(step);
    ranking = read_ranking(file, k, machine);
    if (ranking) {
      record.source = setting_source::cache;
      record.origin = file.file;
    } else if (calibrate) {
      ranking = calibrate_block_ways(step, key, movers, o);
      if (ranking->empty()) {
        ranking.reset();
      } else {
        write_entry(file, k, machine, ranking_text(*ranking));
        record.source = setting_source::calibration;
      }
    }
  }
  // Uncalibrated: pack first (one DMA and one launch whatever the count;
  // any host memory), the loop last.
  if (!ranking) ranking = {{block_way::pack, block_way::batch, block_way::kernel, block_way::loop}};
  record.value = ranking_text(*ranking);
  record_setting(std::move(record));
  std::lock_guard lock(choices_mutex);
  return choices().emplace(k, *ranking).first->second;
}

}  // namespace xfer::mem
