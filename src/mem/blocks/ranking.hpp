#pragma once
// Between choice.cpp and block_copier.cpp: the ranking of the ways for a key
// (the process's, the cache file's, a calibration's or the fixed order).
#include <cstdint>
#include <optional>
#include <string>
#include <vector>
#include <xfer/mem/blocks/block_copier.hpp>

namespace xfer::mem {

std::vector<block_way> block_ranking(block_step& step, const block_choice_key& key, bool calibrate,
                                     const std::vector<block_mover*>& movers, const block_calibration_options& o,
                                     const std::optional<std::string>& cache_file);
// Changes whenever forget_block_choices() drops the process's rankings.
std::uint64_t block_choices_generation() noexcept;

}  // namespace xfer::mem
