// The block copier's one check of a job (block_copier.hpp): every refusal
// names the pair, the block and the bound, before anything moves.
#include <algorithm>
#include <numeric>
#include <random>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>
#include <fmt/format.h>
#include <xfer/mem/blocks/block_copier.hpp>

namespace xfer::mem {

std::string_view to_string(host_block_kind k) noexcept {
  return k == host_block_kind::pinned ? "pinned" : "pageable";
}

std::string_view to_string(block_way w) noexcept {
  switch (w) {
    case block_way::loop: return "loop";
    case block_way::batch: return "batch";
    case block_way::kernel: return "kernel";
    case block_way::pack: return "pack";
  }
  return "?";
}

block_way parse_block_way(std::string_view name, std::string_view what) {
  for (block_way w : all_block_ways)
    if (to_string(w) == name) return w;
  throw std::invalid_argument(fmt::format("{}={}: expected one of loop, batch, kernel, pack", what, name));
}

std::string_view to_string(block_policy p) noexcept {
  return p == block_policy::beside_compute ? "beside_compute" : "alone";
}

block_policy parse_block_policy(std::string_view name, std::string_view what) {
  for (block_policy p : {block_policy::alone, block_policy::beside_compute})
    if (to_string(p) == name) return p;
  throw std::invalid_argument(fmt::format("{}={}: expected alone or beside_compute", what, name));
}

bool holds_multiprocessors(block_way w) noexcept { return w == block_way::kernel; }

std::vector<block_way> ranked_for(std::vector<block_way> ranking, block_policy policy) {
  if (policy == block_policy::beside_compute)
    std::stable_partition(ranking.begin(), ranking.end(), [](block_way w) { return !holds_multiprocessors(w); });
  return ranking;
}

namespace {

[[noreturn]] void refuse(const block_job& job, const std::string& cause) {
  throw block_error(fmt::format("block copy {} of {} blocks of {} bytes refused: {}", to_string(job.direction),
                                job.pairs.size(), job.block_bytes, cause));
}

}  // namespace

void check_block_pairs(std::span<const block_pair> pairs, std::size_t src_count, std::size_t dst_count,
                       std::string_view src_name, std::string_view dst_name) {
  const auto refuse = [](const std::string& cause) { throw block_error(cause); };
  const auto src_blocks = static_cast<std::int64_t>(src_count);
  const auto dst_blocks = static_cast<std::int64_t>(dst_count);
  for (std::size_t i = 0; i < pairs.size(); ++i) {
    const block_pair& p = pairs[i];
    if (p.src < 0 || p.src >= src_blocks)
      refuse(fmt::format("pair {} ({} -> {}): source block {} is outside {}'s blocks 0 to {}", i, p.src, p.dst,
                         p.src, src_name, src_blocks - 1));
    if (p.dst < 0 || p.dst >= dst_blocks)
      refuse(fmt::format("pair {} ({} -> {}): destination block {} is outside {}'s blocks 0 to {}", i, p.src, p.dst,
                         p.dst, dst_name, dst_blocks - 1));
  }
  // Two pairs writing one block: which bytes win would depend on the way.
  // A bit per destination block where that is cheap (the usual case: a few
  // bits per pair; 4096 pairs are checked in microseconds, where sorting
  // them took a noticeable part of a 64 MiB copy), else a sort.
  const auto duplicate = [&](std::size_t first, std::size_t second) {
    refuse(fmt::format("pairs {} and {} both write destination block {} (destination blocks overlap)", first, second,
                       pairs[second].dst));
  };
  const auto first_writer = [&](std::size_t second) {
    std::size_t i = 0;
    while (pairs[i].dst != pairs[second].dst) ++i;
    return i;
  };
  if (static_cast<std::uint64_t>(dst_blocks) <= 64 * pairs.size() + 4096) {
    std::vector<std::uint64_t> seen(static_cast<std::size_t>(dst_blocks) / 64 + 1, 0);
    for (std::size_t i = 0; i < pairs.size(); ++i) {
      const auto d = static_cast<std::uint64_t>(pairs[i].dst);
      const std::uint64_t bit = std::uint64_t{1} << (d % 64);
      if (seen[d / 64] & bit) duplicate(first_writer(i), i);
      seen[d / 64] |= bit;
    }
  } else {
    std::vector<std::pair<std::int64_t, std::size_t>> dsts(pairs.size());
    for (std::size_t i = 0; i < pairs.size(); ++i) dsts[i] = {pairs[i].dst, i};
    std::sort(dsts.begin(), dsts.end());
    for (std::size_t i = 1; i < dsts.size(); ++i)
      if (dsts[i].first == dsts[i - 1].first) duplicate(dsts[i - 1].second, dsts[i].second);
  }
}

void check_block_job(const block_job& job, const block_step& step) {
  const bool to_device = job.direction == staged_direction::to_device;
  if (job.block_bytes == 0) refuse(job, "a block size of 0 bytes");
  if (!job.host) refuse(job, "the host array is null");
  if (!job.device.handle) refuse(job, "the device array is null");
  if (job.host_bytes % job.block_bytes != 0)
    refuse(job, fmt::format("the host array's {} bytes are not a whole number of {}-byte blocks", job.host_bytes,
                            job.block_bytes));
  if (job.device.bytes % job.block_bytes != 0)
    refuse(job, fmt::format("the device array's {} bytes are not a whole number of {}-byte blocks",
                            job.device.bytes, job.block_bytes));
  if (job.pairs.empty()) refuse(job, "the block list is empty");
  const auto host_blocks = job.host_bytes / job.block_bytes;
  const auto device_blocks = job.device.bytes / job.block_bytes;
  try {
    check_block_pairs(job.pairs, to_device ? host_blocks : device_blocks, to_device ? device_blocks : host_blocks,
                      to_device ? "the host array (the source)" : "the device array (the source)",
                      to_device ? "the device array (the destination)" : "the host array (the destination)");
  } catch (const block_error& e) {
    refuse(job, e.what());
  }
  // Where the step's device memory is host memory, the two arrays must not
  // share bytes: a block read after another pair wrote it would depend on
  // the way's order.
  if (const void* view = step.host_view(job.device)) {
    const auto* d = static_cast<const unsigned char*>(view);
    const auto* h = static_cast<const unsigned char*>(job.host);
    if (d < h + job.host_bytes && h < d + job.device.bytes) refuse(job, "the host and device arrays overlap");
  }
}

std::vector<block_pair> scattered_block_pairs(std::size_t n, std::size_t src_blocks, std::size_t dst_blocks,
                                              std::uint64_t seed) {
  if (n > src_blocks || n > dst_blocks)
    throw std::invalid_argument(fmt::format("scattered_block_pairs: {} pairs need at least {} blocks on each side "
                                            "(there are {} and {})",
                                            n, n, src_blocks, dst_blocks));
  std::mt19937_64 rng(seed);
  std::vector<std::int64_t> s(src_blocks), d(dst_blocks);
  std::iota(s.begin(), s.end(), 0);
  std::iota(d.begin(), d.end(), 0);
  std::shuffle(s.begin(), s.end(), rng);
  std::shuffle(d.begin(), d.end(), rng);
  std::vector<block_pair> pairs(n);
  for (std::size_t i = 0; i < n; ++i) pairs[i] = {s[i], d[i]};
  return pairs;
}

block_choice_key choice_key_for(const block_job& job, host_block_kind kind) noexcept {
  std::size_t c = 1;
  while (c <= job.block_bytes / 2) c *= 2;
  return {job.direction, kind, c};
}

}  // namespace xfer::mem
