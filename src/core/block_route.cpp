#include <xfer/core/block_route.hpp>

#include <charconv>
#include <chrono>
#include <cstring>
#include <fmt/format.h>
#include <xfer/mem/settings.hpp>
#include <map>
#include <memory>
#include <span>
#include <xfer/core/errors.hpp>
#include <xfer/core/pattern.hpp>
#include <xfer/core/sample_check.hpp>
#include <xfer/core/size.hpp>
#include <xfer/core/timing.hpp>
#include <xfer/mem/buffer.hpp>

namespace xfer {
namespace {

using clock = std::chrono::steady_clock;

bool to_device(direction d) { return d == direction::h2d; }

mem::staged_direction staged_dir(direction d) {
  return to_device(d) ? mem::staged_direction::to_device : mem::staged_direction::to_host;
}

// The list a point moves: the user's, one block of the whole array
// (blocks-contiguous), or the fixed-seed scattered permutation of every block.
std::vector<mem::block_pair> pairs_of(const point_spec& p) {
  if (p.route == block_routes::contiguous) return {{0, 0}};
  if (p.block_list) {
    std::vector<mem::block_pair> out;
    out.reserve(p.block_list->size());
    for (const auto& b : *p.block_list) out.push_back({b.src, b.dst});
    return out;
  }
  return scattered_blocks(p);
}

class block_transfer final : public transfer {
 public:
  block_transfer(const point_spec& p, mem::block_copier& copier, std::unique_ptr<mem::host_resource> kind)
      : spec_(p), copier_(copier), step_(copier.step()), kind_(std::move(kind)), pairs_(pairs_of(p)) {
    block_ = p.route == block_routes::contiguous ? p.bytes : p.block_bytes;
    // A source block may go to several destinations (a legal list): the
    // pattern has one block per distinct source, at its first pair.
    std::map<std::uint64_t, std::size_t> first_by_src;
    first_of_.reserve(pairs_.size());
    for (std::size_t i = 0; i < pairs_.size(); ++i) {
      const auto [it, fresh] = first_by_src.emplace(pairs_[i].src, i);
      if (fresh) firsts_.push_back(i);
      first_of_.push_back(it->second);
    }
    const auto t0 = clock::now();
    host_ = mem::buffer(*kind_, p.bytes, kind_->natural_alignment());
    dev_ = step_.allocate(p.bytes);
    costs_.alloc_s = seconds_since(t0);
    job_ = {staged_dir(p.dir), host_.data(), p.bytes, dev_, block_, pairs_, nullptr};
    mem::check_block_job(job_, step_);  // the plan checked the list: a refusal here is a defect, failing the point
    access_ = step_.access(host_.data(), p.bytes);
    if (const auto w = block_route_way(p.route); w || p.route == block_routes::contiguous) {
      mover_ = &copier_.mover(w.value_or(mem::block_way::loop));
      if (auto why = mover_->refusal(job_, access_); !why.empty()) throw skip_point(std::move(why));
    } else {
      // The choice (and its calibration, the first time a key is met) is
      // made here, outside the samples, and named in the point's note.
      chosen_ = copier_.choose(job_);
    }
    const auto t1 = clock::now();
    fill_source();
    costs_.touch_s = seconds_since(t1);
  }
  ~block_transfer() override { step_.deallocate(dev_); }

  sample run(std::size_t reps) override {
    wall_timer timer;
    return loop_.run(timer, reps, [&](std::size_t, std::size_t) { move(); });
  }

  // blocks-auto's choice: the ranking of the job's key, as the run's settings
  // record it (a forced way: the process's "way" setting).
  std::optional<settings_ref> settings_used() const override {
    if (!chosen_) return std::nullopt;
    const auto in = mem::current_inputs();
    if (in->way) return settings_ref{"blocks", ""};
    return settings_ref{"blocks", mem::block_choice_cache_key(step_, mem::choice_key_for(job_, access_.kind))};
  }

  // The way blocks-auto took, and the list's shape: the report's reading.
  std::string note() const override {
    const char* list = spec_.route == block_routes::contiguous ? "one block of the whole array"
                       : spec_.block_list                          ? "the list given"
                                                                   : "scattered, fixed seed";
    std::string n = fmt::format("{} blocks of {} ({}), host memory reached as {}", pairs_.size(), format_size(block_),
                                list, mem::to_string(access_.kind));
    if (chosen_) n += fmt::format("; the copier chose {}", mem::to_string(*chosen_));
    return n;
  }

  // Core verifies (src/core/verify.cpp) the destination blocks of each
  // distinct source's first pair, read in list order: the source was filled
  // so that they then hold the pattern. A later pair of the same source must
  // hold what its first pair's destination holds: poisoned alike, compared on
  // every read.
  std::span<const sample_destination> places() const override { return sample_destinations(spec_.dir); }
  std::uint64_t place_bytes() const override { return firsts_.size() * block_; }
  void reach_place(const sample_destination& d, place_access a,
                   const std::function<void(std::span<std::byte>)>& use) override {
    array_view arr = open_array(d.on_device, a != place_access::overwrite);
    // Kept from check to check: a fresh buffer each check paid its zeroing and page faults again,
    // time a whole-run budget counts against the point's sampling.
    if (!place_) place_ = std::make_unique_for_overwrite<std::byte[]>(place_bytes());
    const std::span<std::byte> blocks(place_.get(), place_bytes());
    if (a != place_access::overwrite) {
      for (std::size_t k = 0; k < firsts_.size(); ++k)
        std::memcpy(blocks.data() + k * block_, dst_block(arr, firsts_[k]), block_);
      check_repeated_sources(arr);
    }
    use(blocks);
    if (a == place_access::read) return;
    for (std::size_t k = 0; k < firsts_.size(); ++k)
      std::memcpy(dst_block(arr, firsts_[k]), blocks.data() + k * block_, block_);
    for (std::size_t i = 0; i < pairs_.size(); ++i)
      if (first_of_[i] != i) std::memcpy(dst_block(arr, i), dst_block(arr, first_of_[i]), block_);
    close_array(arr, d.on_device);
  }

  first_use setup_costs() const override { return costs_; }
  clock_kind timer_kind() const override { return clock_kind::wall; }
  double timer_resolution_s() const override { return wall_timer().resolution_s(); }
  std::uint64_t bytes_per_rep() const override { return pairs_.size() * block_; }

 private:
  void move() {
    if (mover_)
      mover_->move(job_, access_);
    else
      copier_.copy(job_);
  }

  // An array as bytes the CPU can touch: host memory, the step's device
  // memory where the host addresses it (the host step), else a copy of it
  // (in a buffer kept for the point's later checks).
  struct array_view {
    std::byte* bytes;
    bool copied;
  };
  array_view open_array(bool device, bool read) {
    if (!device) return {host_.bytes_ptr(), false};
    if (const void* v = step_.host_view(dev_)) return {static_cast<std::byte*>(const_cast<void*>(v)), false};
    if (!device_copy_) device_copy_ = std::make_unique<std::byte[]>(spec_.bytes);  // zeroed: written back whole
    if (read) queue_copy(device_copy_.get(), dev_.handle);
    return {device_copy_.get(), true};
  }
  void close_array(array_view& a, bool device) {
    if (device && a.copied) queue_copy(dev_.handle, a.bytes);
  }
  void queue_copy(void* dst, const void* src) {
    const auto q = step_.open_queue(nullptr);
    q->copy(dst, src, spec_.bytes);
    q->finish();
  }

  std::byte* dst_block(const array_view& arr, std::size_t pair) const { return arr.bytes + pairs_[pair].dst * block_; }

  // A later pair of a source holds what the source's first pair holds, or a copy went astray.
  void check_repeated_sources(const array_view& arr) const {
    for (std::size_t i = 0; i < pairs_.size(); ++i) {
      if (first_of_[i] == i) continue;
      if (std::memcmp(dst_block(arr, i), dst_block(arr, first_of_[i]), block_) != 0)
        throw verification_error(fmt::format("block pair {} ({}:{}) differs from pair {}, which copies the same source "
                                             "block",
                                             i, pairs_[i].src, pairs_[i].dst, first_of_[i]));
    }
  }

  // The k-th distinct source block holds bytes [k*B, (k+1)*B) of the pattern,
  // so the first pairs' destination blocks in list order hold the whole
  // pattern once moved.
  void fill_source() {
    const std::uint64_t seed = to_device(spec_.dir) ? seed_h2d : seed_d2h;
    array_view arr = open_array(!to_device(spec_.dir), false);
    for (std::size_t k = 0; k < firsts_.size(); ++k)
      fill_pattern(arr.bytes + pairs_[firsts_[k]].src * block_, block_, seed, k * block_);
    close_array(arr, !to_device(spec_.dir));
  }

  point_spec spec_;
  mem::block_copier& copier_;
  mem::block_step& step_;
  std::unique_ptr<mem::host_resource> kind_;
  std::vector<mem::block_pair> pairs_;
  std::vector<std::size_t> firsts_;    // the pairs that are their source's first, in list order
  std::vector<std::size_t> first_of_;  // for each pair, its source's first pair
  std::size_t block_ = 0;
  mem::buffer host_;
  mem::device_ref dev_{};
  mem::block_job job_;
  mem::host_access access_;
  mem::block_mover* mover_ = nullptr;  // null: the copier chooses
  std::optional<mem::block_way> chosen_;  // blocks-auto: the copier's choice for this job
  std::unique_ptr<std::byte[]> place_;        // the checked blocks, in the order verify reads them
  std::unique_ptr<std::byte[]> device_copy_;  // the device array, where the host cannot address it
  first_use costs_;
  no_gate gate_;  // each move blocks until its blocks arrived: nothing to hold
  timed_batches loop_{gate_};
};

}  // namespace

std::vector<route_info> block_route_infos(std::string_view step) {
  using enum direction;
  const auto info = [&](route_kind r, std::string what) {
    route_info i{r, fmt::format("{} ({}; wall clock)", what, step), {h2d, d2h}, true};
    i.block_workload = true;
    return i;
  };
  return {
      info(block_routes::loop, "many blocks: one async copy per block, what engines do today"),
      info(block_routes::batch, "many blocks: every block in one batched copy call (cudaMemcpyBatchAsync, CUDA 12.8+)"),
      info(block_routes::kernel, "many blocks: a gather/scatter kernel reading or writing pinned, mapped host memory"),
      info(block_routes::pack,
           "many blocks: CPU threads pack them into pinned staging, one DMA and a scatter kernel per ~4 MiB group "
           "(the reverse to the host)"),
      info(block_routes::choice, "many blocks: libxfer's block copier, the way its calibration ranks first"),
      info(block_routes::contiguous, "one copy of the whole array: the ceiling the block ways are held against"),
  };
}

bool is_block_route(route_kind r) {
  return block_route_way(r) || r == block_routes::choice || r == block_routes::contiguous;
}

std::optional<mem::block_way> block_route_way(route_kind r) {
  if (r == block_routes::loop) return mem::block_way::loop;
  if (r == block_routes::batch) return mem::block_way::batch;
  if (r == block_routes::kernel) return mem::block_way::kernel;
  if (r == block_routes::pack) return mem::block_way::pack;
  return std::nullopt;
}

std::string block_pairing_gap(route_kind route, const mem::host_resource& kind) {
  if (route != block_routes::kernel || kind.props().pinned) return {};
  return fmt::format("the kernel way reads and writes host memory from the device, which needs it page-locked and "
                     "mapped; '{}' is not",
                     kind.kind());
}

std::unique_ptr<transfer> make_block_transfer(const point_spec& p, mem::block_copier& copier,
                                              std::unique_ptr<mem::host_resource> kind) {
  if (!kind) throw skip_point("a block route needs a host memory kind");
  if (p.dir != direction::h2d && p.dir != direction::d2h)
    throw std::logic_error(fmt::format("block route {} was handed direction {}", to_string(p.route), to_string(p.dir)));
  if (p.block_bytes == 0 || p.bytes % p.block_bytes != 0)
    throw std::logic_error(fmt::format("block route {} was handed blocks of {} B for {} B", to_string(p.route),
                                       p.block_bytes, p.bytes));
  if (auto gap = block_pairing_gap(p.route, *kind); !gap.empty()) throw skip_point(std::move(gap));
  return std::make_unique<block_transfer>(p, copier, std::move(kind));
}

std::vector<mem::block_pair> scattered_blocks(const point_spec& p) {
  const std::size_t n = p.bytes / p.block_bytes;
  return mem::scattered_block_pairs(n, n, n, block_list_seed);
}

void reach_in_source_order(std::span<const mem::block_pair> pairs, std::size_t block_bytes, place_access a,
                           std::span<std::byte> whole, const std::function<void(std::span<std::byte>)>& use) {
  std::vector<std::byte> ordered(whole.size());
  if (a != place_access::overwrite)
    for (const auto& q : pairs)
      std::memcpy(ordered.data() + q.src * block_bytes, whole.data() + q.dst * block_bytes, block_bytes);
  use(ordered);
  if (a != place_access::read)
    for (const auto& q : pairs)
      std::memcpy(whole.data() + q.dst * block_bytes, ordered.data() + q.src * block_bytes, block_bytes);
}

void require_scattered_list(const point_spec& p) {
  if (p.block_list)
    throw skip_point(fmt::format("{} moves the scattered list of every block (its check reads the destination as "
                                 "the source's permutation); a --block-pairs list is for the block copier's routes",
                                 to_string(p.route)));
}

std::vector<std::uint64_t> default_block_sizes(bool dense) {
  if (dense) return pow2_range(4096, 2u << 20);
  return {4096, 16384, 65536, 262144, 1u << 20, 2u << 20};
}

std::vector<std::uint64_t> default_block_totals(bool dense) {
  if (dense) return {16u << 20, 64u << 20, 256u << 20};
  return {64u << 20};
}

std::vector<block_pair_spec> parse_block_pairs(std::string_view text) {
  std::vector<block_pair_spec> out;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t comma = std::min(text.find(',', start), text.size());
    const std::string_view item = text.substr(start, comma - start);
    const std::size_t colon = item.find(':');
    block_pair_spec p;
    const auto number = [](std::string_view s, std::int64_t& v) {
      const auto r = std::from_chars(s.data(), s.data() + s.size(), v);
      return !s.empty() && r.ec == std::errc() && r.ptr == s.data() + s.size();
    };
    if (colon == std::string_view::npos || !number(item.substr(0, colon), p.src) ||
        !number(item.substr(colon + 1), p.dst))
      throw usage_error(fmt::format("--block-pairs: '{}' is not SRC:DST (two block indices)", item));
    out.push_back(p);
    start = comma + 1;
  }
  return out;
}

void check_block_selection(const std::vector<std::uint64_t>& totals, const std::vector<std::uint64_t>& block_sizes,
                           const std::vector<block_pair_spec>* list) {
  if (block_sizes.empty()) throw usage_error("--block-sizes: no block size given");
  if (list && list->empty()) throw usage_error("--block-pairs: the block list is empty");
  for (auto b : block_sizes) {
    if (b == 0) throw usage_error("--block-sizes: a block size of 0 bytes");
    for (auto t : totals) {
      if (t % b != 0)
        throw usage_error(fmt::format("--block-sizes {} ({} B) does not divide --blocks-total {} ({} B) into whole "
                                      "blocks",
                                      format_size(b), b, format_size(t), t));
      if (!list) continue;
      std::vector<mem::block_pair> pairs;
      for (const auto& p : *list) pairs.push_back({p.src, p.dst});
      try {
        mem::check_block_pairs(pairs, t / b, t / b, "the source array", "the destination array");
      } catch (const mem::block_error& e) {
        throw usage_error(fmt::format("--block-pairs at blocks of {} in {}: {}", format_size(b), format_size(t), e.what()));
      }
    }
  }
}

}  // namespace xfer
