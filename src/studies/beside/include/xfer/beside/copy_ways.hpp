#pragma once
// The ways of copying `xferbench beside` measures, written over libxfer's
// steps (device_step for a contiguous copy, block_step for block lists), so
// the same sides run on the host steps in CI and on CUDA's on a GPU. Every
// way moves the same bytes a step: `blocks` blocks of `block_bytes`, in one
// direction, so their joint times beside a workload compare.
//
//   plain    the step's own copy of pageable memory (cudaMemcpy; memcpy on the host step)
//   staged   libxfer's staged copier, pageable memory, its CPU threads
//   copy     one contiguous copy from pinned memory (the copy engine's best)
//   loop, batch, kernel, pack: the block copier's ways (block_copier.hpp) for the
//            block list from pinned memory, scattered both sides
//   auto, auto-beside: the block copier itself, choosing among those ways by its
//            policy alone or beside_compute (the way it chose is in chose())
#include <cstddef>
#include <memory>
#include <string>
#include <vector>
#include <xfer/beside/measure.hpp>
#include <xfer/mem/blocks/block_step.hpp>
#include <xfer/mem/staged/device_step.hpp>

namespace xfer::beside {

// A copy way: an activity whose steps move bytes, and that can say whether
// what it moved arrived intact.
class copy_side : public activity {
 public:
  // After the run: empty where the destination holds the source's bytes,
  // else what differs first.
  virtual std::string check() = 0;
  // Why this way cannot run on its step (empty: it can); asked before measuring.
  virtual std::string refusal() const { return {}; }
  // The way a copier chose for its steps (the auto ways), else empty.
  virtual std::string chose() const { return {}; }
};

struct copy_shape {
  mem::staged_direction direction = mem::staged_direction::to_device;
  std::size_t block_bytes = std::size_t{16} << 10;
  std::size_t blocks = 4096;
  std::size_t bytes() const { return block_bytes * blocks; }
};

std::vector<std::string> way_names();  // every way, in the order above
bool is_block_way(const std::string& name);  // loop, batch, kernel, pack, auto, auto-beside

// The way `name` over the steps (which must outlive it): device_step for
// plain and staged, block_step for the rest. Throws std::invalid_argument
// for an unknown name, and what the step throws where it cannot make its
// memory. A way the step cannot run (batch without cudaMemcpyBatchAsync, the
// kernel way where pinned memory is not mapped) says why in refusal().
std::unique_ptr<copy_side> make_way(const std::string& name, const copy_shape& shape, mem::device_step& contiguous,
                                    mem::block_step& blocks);

}  // namespace xfer::beside
