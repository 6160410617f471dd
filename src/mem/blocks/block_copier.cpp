// The block copier (block_copier.hpp): check, choose, move.
#include <algorithm>
#include <fmt/format.h>
#include <xfer/mem/blocks/block_copier.hpp>
#include <xfer/mem/settings.hpp>

#include "ranking.hpp"

namespace xfer::mem {

block_copier::block_copier(block_step& step, block_copier_options options)
    : step_(step), options_(std::move(options)) {
  // The caller's way over the installed inputs' (settings.hpp).
  const auto inputs = current_inputs();
  forced_ = options_.way ? options_.way : inputs->way;
  policy_ = options_.policy.value_or(inputs->blocks_policy.value_or(block_policy::alone));
  for (block_way w : all_block_ways) movers_[static_cast<int>(w)] = make_block_mover(w, step_);
}

block_copier::~block_copier() = default;

block_way block_copier::choose_locked(const block_job& job, const host_access& host) {
  if (forced_) {
    if (const std::string why = mover(*forced_).refusal(job, host); !why.empty())
      throw block_error(fmt::format("block copy {} of {} blocks of {} bytes refused: way {} was forced and cannot: {}",
                                    to_string(job.direction), job.pairs.size(), job.block_bytes,
                                    to_string(*forced_), why));
    return *forced_;
  }
  // After the first copy of a key, the choice is this lookup: no host name
  // or key formatted, no global lock, no calibration (the auto path's cost
  // beside a way called alone is the job's check and access() alone).
  const block_choice_key key = choice_key_for(job, host.kind);
  const std::uint64_t generation = block_choices_generation();
  if (generation != rankings_generation_) {
    rankings_.clear();
    rankings_generation_ = generation;
  }
  const auto slot = std::make_tuple(static_cast<int>(key.direction), static_cast<int>(key.kind), key.size_class);
  auto found = rankings_.find(slot);
  if (found == rankings_.end()) {
    std::vector<block_mover*> all;
    for (auto& m : movers_) all.push_back(m.get());
    auto ranking = block_ranking(step_, key, options_.calibrate, all, options_.calibration, options_.cache_file);
    // A way the probe could not time (the probe's memory was not mapped, say)
    // still comes before failing: after the ranked ones, loop last.
    for (block_way w : {block_way::pack, block_way::batch, block_way::kernel, block_way::loop})
      if (std::find(ranking.begin(), ranking.end(), w) == ranking.end()) ranking.push_back(w);
    found = rankings_.emplace(slot, ranked_for(std::move(ranking), policy_)).first;
  }
  for (block_way w : found->second)
    if (mover(w).refusal(job, host).empty()) return w;
  return block_way::loop;  // never refuses
}

block_way block_copier::choose(const block_job& job) {
  check_block_job(job, step_);
  std::lock_guard lock(mutex_);
  return choose_locked(job, step_.access(job.host, job.host_bytes));
}

block_way block_copier::copy(const block_job& job) {
  check_block_job(job, step_);
  std::lock_guard lock(mutex_);
  const host_access host = step_.access(job.host, job.host_bytes);
  const block_way w = choose_locked(job, host);
  mover(w).move(job, host);
  return w;
}

}  // namespace xfer::mem
