// The block copier's choice of a way (block_copier.hpp): a ranking per
// (direction, host kind, block size class), calibrated once per machine and
// device and kept in this process and in a file beside the staged copier's
// tuning cache, under the same kind of key (tuning.hpp).
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <mutex>
#include <sstream>
#include <vector>
#include <fmt/format.h>
#include <xfer/mem/blocks/block_copier.hpp>
#include <xfer/mem/staged/tuning.hpp>

#include "ranking.hpp"

namespace xfer::mem {
namespace {

std::mutex choices_mutex;
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
  std::ifstream in(file);
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

// The key's line replaced, through a temporary file renamed over the old
// one: a program reading at the same time sees the old file or the new.
void write_ranking(const std::string& file, const std::string& key, const std::vector<block_way>& ranking) {
  std::error_code ec;
  const std::filesystem::path path(file);
  std::filesystem::create_directories(path.parent_path(), ec);
  std::string text;
  {
    std::ifstream in(file);
    for (std::string line; std::getline(in, line);)
      if (!(line.size() > key.size() && line.compare(0, key.size(), key) == 0 && line[key.size()] == '\t'))
        text += line + '\n';
  }
  text += key + '\t';
  for (std::size_t i = 0; i < ranking.size(); ++i) text += fmt::format("{}{}", i ? " " : "", to_string(ranking[i]));
  text += '\n';
  const std::string tmp = fmt::format("{}.{}.tmp", file, ::getpid());
  if (!(std::ofstream(tmp, std::ios::trunc) << text)) {
    std::filesystem::remove(tmp, ec);
    return;
  }
  std::filesystem::rename(tmp, path, ec);
  if (ec) std::filesystem::remove(tmp, ec);
}

using clock_type = std::chrono::steady_clock;

}  // namespace

std::string block_choice_cache_key(const block_step& step, const block_choice_key& key) {
  return fmt::format("{}/{}/{}/{}/{}/{}", this_host(), step.name(), step.device_key(),
                     key.direction == staged_direction::to_device ? "h2d" : "d2h", to_string(key.kind),
                     key.size_class);
}

std::string block_choice_file() {
  if (const char* f = std::getenv("XFER_BLOCKS_CACHE")) return std::string(f) == "off" ? "" : f;
  const std::string staged = tuning_cache_file();
  if (staged.empty()) return {};
  return (std::filesystem::path(staged).parent_path() / "block-ways").string();
}

void forget_block_choices() {
  std::lock_guard lock(choices_mutex);
  choices().clear();
}

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

  std::vector<std::pair<double, block_way>> timed;
  for (block_mover* m : movers) {
    if (!m->refusal(job, access).empty()) continue;
    m->move(job, access);  // warm-up: staging pinned, kernels loaded
    double best = std::numeric_limits<double>::infinity();
    for (unsigned r = 0; r < std::max(1u, o.reps); ++r) {
      const auto t0 = clock_type::now();
      m->move(job, access);
      best = std::min(best, std::chrono::duration<double>(clock_type::now() - t0).count());
    }
    timed.emplace_back(best, m->way());
  }
  std::stable_sort(timed.begin(), timed.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<block_way> ranking;
  for (const auto& t : timed) ranking.push_back(t.second);
  return ranking;
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
