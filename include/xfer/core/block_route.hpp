#pragma once
// The many-blocks workload (issue 38, item 1): N blocks of B bytes between
// scattered host places and scattered device places, by a fixed-seed list
// (mem::scattered_block_pairs), timed through each way of libxfer's block
// copier alone (xfer/mem/blocks/block_copier.hpp), through the copier's own
// choice, and beside one contiguous copy of the same total (the ceiling).
// The ways are the copier's, written once over a backend's block_step: a
// backend with a step lists these routes (block_route_infos) and hands its
// copier to make_block_transfer; what is here is what every such backend
// shares, as core/staged_route.hpp is for the staged copier.
//
// A block point's `bytes` is the size of each array (host and device), its
// block_bytes the block size: the scattered list moves every block of the
// array once (a permutation on each side), so GB/s = bytes / time. Core's
// verification reads the destination blocks in list order, which hold the
// pattern then, so every block's bytes are checked at their destination.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>
#include <xfer/core/backend.hpp>
#include <xfer/mem/blocks/block_copier.hpp>

namespace xfer {

// The block routes, shared by every backend with a block step.
namespace block_routes {
// One declaration: the ways of the copier alone (mem::block_way), the
// copier's choice (what a program calling libxfer gets), and one copy of the
// whole array (the ceiling the ways are held against, measured once per
// total, its block_bytes the total). The kernel way's device code reads or
// writes host memory across the link; the others cross by DMA.
inline const route_kind loop = route_kind::declare("blocks-loop", route_family::copy),
                        batch = route_kind::declare("blocks-batch", route_family::copy),
                        kernel = route_kind::declare("blocks-kernel", route_family::kernel_host),
                        pack = route_kind::declare("blocks-pack", route_family::copy),
                        choice = route_kind::declare("blocks-auto", route_family::copy),
                        contiguous = route_kind::declare("blocks-contiguous", route_family::copy);
}  // namespace block_routes

// The seed of the scattered list every block point moves (the same list in
// every run, so runs compare).
inline constexpr std::uint64_t block_list_seed = 38;

// The samples every block point takes whatever the run's budget
// (measure_options::samples_floor): the report names a way the winner at a
// block size only where it is faster beyond both points' spread of five
// samples at least (python/xferbench_report/blocks.py). Without the floor
// a default `sweep --blocks` gave most points one sample each (its budget
// went to preparing and checking 64 MiB arrays), and a spread of one sample
// is none (docs/decisions/0004-finding-thresholds.md).
inline constexpr std::size_t block_samples_floor = 5;

// The block routes as a backend lists them in routes(); `step` says what
// moves the bytes ("the CUDA runtime", "memcpy on the host").
std::vector<route_info> block_route_infos(std::string_view step);
// One of the block routes above.
bool is_block_route(route_kind r);
// The way a block route times alone; none for blocks-auto and blocks-contiguous.
std::optional<mem::block_way> block_route_way(route_kind r);

// Why `route` can never move host memory of `kind`: the kernel way reads and
// writes host memory from the device, which needs it page-locked; "" else.
std::string block_pairing_gap(route_kind route, const mem::host_resource& kind);

// A prepared block point over `copier` (its step's device memory, its ways):
// skip_point where the point's way refuses the host memory (the words of
// the way's refusal) or its batch call is missing. The copier must outlive
// the transfer.
std::unique_ptr<transfer> make_block_transfer(const point_spec& p, mem::block_copier& copier,
                                              std::unique_ptr<mem::host_resource> kind);

// A backend's own list route (Vulkan's regions, OpenCL's queue of copies)
// moves the scattered permutation of every block of the point, its source
// holding the pattern in place: scattered_blocks gives that list, and
// reach_in_source_order hands core's check the destination array `whole`
// put back in source order (where it holds the pattern again), writing back
// what `use` wrote (a poison) block by block. A list given (--block-pairs)
// moves only some blocks: such a route skips it, saying so.
std::vector<mem::block_pair> scattered_blocks(const point_spec& p);
void reach_in_source_order(std::span<const mem::block_pair> pairs, std::size_t block_bytes, place_access a,
                           std::span<std::byte> whole, const std::function<void(std::span<std::byte>)>& use);
// skip_point where a backend's own list route is handed a --block-pairs list.
void require_scattered_list(const point_spec& p);

// The default grid of --blocks: block sizes 4 KiB to 2 MiB (x4 apart; dense:
// every power of two), arrays of 64 MiB (dense: 16, 64 and 256 MiB).
std::vector<std::uint64_t> default_block_sizes(bool dense);
std::vector<std::uint64_t> default_block_totals(bool dense);

// "SRC:DST,SRC:DST": a block list given on the command line (indices in
// blocks). Throws usage_error naming the item that is not two integers.
std::vector<block_pair_spec> parse_block_pairs(std::string_view text);

// The block selection checked before anything runs (usage_error, one line):
// a block size of 0 or one that does not divide a total, an empty list, and
// for a list given, an index beyond the array's blocks at some size or two
// pairs writing one destination block.
void check_block_selection(const std::vector<std::uint64_t>& totals, const std::vector<std::uint64_t>& block_sizes,
                           const std::vector<block_pair_spec>* list);

}  // namespace xfer
