// The block copier's four ways (block_copier.hpp), each written once over a
// block_step's queue: what differs between CUDA and the host step is in the
// step, what differs between the ways is here.
#include <algorithm>
#include <cstring>
#include <vector>
#include <fmt/format.h>
#include <xfer/mem/blocks/block_copier.hpp>
#include <xfer/mem/caching_pool.hpp>
#include <xfer/mem/staged/tuning.hpp>
#include <xfer/mem/thread_team.hpp>

#include "team_split.hpp"

namespace xfer::mem {
namespace {

unsigned char* at(void* base, std::int64_t block, std::size_t block_bytes) {
  return static_cast<unsigned char*>(base) + static_cast<std::size_t>(block) * block_bytes;
}

bool to_device(const block_job& job) { return job.direction == staged_direction::to_device; }

// The job's source and destination bases as the host and the device name them.
struct sides {
  void* src;
  void* dst;
};
sides bases(const block_job& job, void* host_base) {
  return to_device(job) ? sides{host_base, job.device.handle} : sides{job.device.handle, host_base};
}

class loop_mover final : public block_mover {
 public:
  explicit loop_mover(block_step& s) : step_(s) {}
  block_way way() const noexcept override { return block_way::loop; }
  std::string refusal(const block_job&, const host_access&) const override { return {}; }
  void move(const block_job& job, const host_access&) override {
    const auto q = step_.open_queue(job.after_queue);
    const sides b = bases(job, job.host);
    for (const block_pair& p : job.pairs)
      q->copy(at(b.dst, p.dst, job.block_bytes), at(b.src, p.src, job.block_bytes), job.block_bytes);
    q->finish();
  }

 private:
  block_step& step_;
};

class batch_mover final : public block_mover {
 public:
  explicit batch_mover(block_step& s) : step_(s) {}
  block_way way() const noexcept override { return block_way::batch; }
  std::string refusal(const block_job&, const host_access&) const override { return step_.batch_unavailable(); }
  void move(const block_job& job, const host_access&) override {
    const sides b = bases(job, job.host);
    dsts_.resize(job.pairs.size());
    srcs_.resize(job.pairs.size());
    for (std::size_t i = 0; i < job.pairs.size(); ++i) {
      dsts_[i] = at(b.dst, job.pairs[i].dst, job.block_bytes);
      srcs_[i] = at(b.src, job.pairs[i].src, job.block_bytes);
    }
    const auto q = step_.open_queue(job.after_queue);
    q->copy_batch(dsts_.data(), srcs_.data(), job.block_bytes, job.pairs.size());
    q->finish();
  }

 private:
  block_step& step_;
  std::vector<void*> dsts_;
  std::vector<const void*> srcs_;
};

// The pairs as the two index arrays a kernel takes.
void split(const block_job& job, std::vector<std::int64_t>& src, std::vector<std::int64_t>& dst) {
  src.resize(job.pairs.size());
  dst.resize(job.pairs.size());
  for (std::size_t i = 0; i < job.pairs.size(); ++i) {
    src[i] = job.pairs[i].src;
    dst[i] = job.pairs[i].dst;
  }
}

class kernel_mover final : public block_mover {
 public:
  explicit kernel_mover(block_step& s) : step_(s) {}
  block_way way() const noexcept override { return block_way::kernel; }
  std::string refusal(const block_job&, const host_access& host) const override {
    if (host.device_view) return {};
    if (host.kind == host_block_kind::pageable)
      return "the kernel way reads and writes host memory from the device, which needs it pinned and mapped "
             "(cudaHostAlloc, cudaHostRegister); this host array is pageable";
    return "the kernel way needs host memory mapped into the device's address space; this pinned host array is not";
  }
  void move(const block_job& job, const host_access& host) override {
    split(job, src_, dst_);
    const sides b = bases(job, host.device_view);
    const auto q = step_.open_queue(job.after_queue);
    q->copy_blocks(b.dst, b.src, job.block_bytes, src_.data(), dst_.data(), job.pairs.size());
    q->finish();
  }

 private:
  block_step& step_;
  std::vector<std::int64_t> src_, dst_;
};

// Pack: the CPU threads gather the host blocks into one pinned buffer in
// pair order, DMAs move it, a kernel scatters it on the device (and the
// reverse to the host). Fixed costs: one DMA and one launch per group of
// about 4 MiB, not per block.
class pack_mover final : public block_mover {
 public:
  // The team as the staged copier's (default_staged_threads): the same CPU
  // copy into pinned staging, which needs more than a few threads to keep up
  // with the link (docs/decisions/0001-staged-copier-shape.md).
  explicit pack_mover(block_step& s)
      : step_(s), pool_(s.staging_memory()), team_(default_staged_threads()) {}
  ~pack_mover() override {
    if (scratch_.handle) step_.deallocate(scratch_);
  }
  block_way way() const noexcept override { return block_way::pack; }
  std::string refusal(const block_job&, const host_access&) const override { return {}; }
  void move(const block_job& job, const host_access&) override {
    const std::size_t n = job.pairs.size();
    grow_scratch(n * job.block_bytes);
    split(job, src_, dst_);
    // The queue first: a step makes its device current when it opens one,
    // and pinning staging memory needs it (block_step.hpp).
    const auto q = step_.open_queue(job.after_queue);
    const group_ring ring = ring_for(n, job.block_bytes);
    void* staging = pool_.allocate(ring.bytes(), 4096);
    struct give_back {
      caching_pool& pool;
      void* p;
      std::size_t bytes;
      ~give_back() { pool.deallocate(p, bytes, 4096); }
    } held{pool_, staging, ring.bytes()};
    try {
      run(job, *q, staging, ring);
    } catch (...) {
      // No DMA may still use the staging buffer once it is back in the pool.
      try {
        q->finish();
      } catch (...) {
      }
      throw;
    }
  }

 private:
  // The pairs in groups of about group_bytes: the CPU packs (or unpacks)
  // one group while the device moves another, so the CPU copy and the DMA
  // overlap as in the staged copier, and the copy costs one DMA and one
  // launch per group rather than per block. The groups pass through a ring
  // of ring_slots staging slots, not a buffer of the whole copy: the slots
  // the CPU writes stay in its cache for the DMA that reads them, as the
  // staged copier's ring does (docs/decisions/0011-pack-ring.md).
  struct group_ring {
    std::size_t per_group;  // pairs in a group
    std::size_t slot_bytes;
    std::size_t slots;
    std::size_t bytes() const noexcept { return slot_bytes * slots; }
  };
  static group_ring ring_for(std::size_t pairs, std::size_t block_bytes) {
    const std::size_t per_group = std::max<std::size_t>(1, group_bytes / block_bytes);
    const std::size_t groups = (pairs + per_group - 1) / per_group;
    return {per_group, per_group * block_bytes, std::max<std::size_t>(1, std::min(groups, ring_slots))};
  }
  void run(const block_job& job, block_queue& q, void* staging, const group_ring& ring) {
    const std::size_t n = job.pairs.size(), B = job.block_bytes, per_group = ring.per_group;
    const std::size_t groups = (n + per_group - 1) / per_group;
    auto slot = [&](std::size_t g) { return static_cast<unsigned char*>(staging) + g % ring.slots * ring.slot_bytes; };
    // Pair i's bytes in its group's slot.
    auto in_slot = [&](std::size_t i) { return slot(i / per_group) + i % per_group * B; };
    std::vector<std::size_t> dma_done(groups);
    if (to_device(job)) {
      for (std::size_t g = 0; g < groups; ++g) {
        const std::size_t a = g * per_group, b = std::min(n, a + per_group);
        // The slot's previous group must be on the device before it is written again.
        if (g >= ring.slots) q.wait(dma_done[g - ring.slots]);
        each_piece(a, b, B, [&](std::size_t i, std::size_t offset, std::size_t bytes) {
          std::memcpy(in_slot(i) + offset, at(job.host, src_[i], B) + offset, bytes);
        });
        q.copy(at(scratch_.handle, std::int64_t(a), B), slot(g), (b - a) * B);
        dma_done[g] = q.mark();
        q.copy_blocks(job.device.handle, at(scratch_.handle, std::int64_t(a), B), B, nullptr, dst_.data() + a, b - a);
      }
      q.finish();
    } else {
      // One gather into the scratch, then a DMA into a slot and a mark per
      // group; a slot's next DMA is queued once its group is unpacked.
      q.copy_blocks(scratch_.handle, job.device.handle, B, src_.data(), nullptr, n);
      auto queue_dma = [&](std::size_t g) {
        const std::size_t a = g * per_group, b = std::min(n, a + per_group);
        q.copy(slot(g), at(scratch_.handle, std::int64_t(a), B), (b - a) * B);
        dma_done[g] = q.mark();
      };
      for (std::size_t g = 0; g < std::min(groups, ring.slots); ++g) queue_dma(g);
      for (std::size_t g = 0; g < groups; ++g) {
        const std::size_t a = g * per_group, b = std::min(n, a + per_group);
        q.wait(dma_done[g]);
        each_piece(a, b, B, [&](std::size_t i, std::size_t offset, std::size_t bytes) {
          std::memcpy(at(job.host, dst_[i], B) + offset, in_slot(i) + offset, bytes);
        });
        if (g + ring.slots < groups) queue_dma(g + ring.slots);
      }
      q.finish();
    }
  }
  void grow_scratch(std::size_t bytes) {
    if (scratch_.bytes >= bytes) return;
    if (scratch_.handle) step_.deallocate(std::exchange(scratch_, device_ref{}));
    scratch_ = step_.allocate(bytes);
  }
  // f(pair, offset, bytes) for the blocks of pairs [a, b), their bytes cut
  // evenly across the team (team_split.hpp): every member copies, however
  // few the blocks of a group.
  template <class F>
  void each_piece(std::size_t a, std::size_t b, std::size_t block_bytes, F&& f) {
    const detail::staging_range group{a * block_bytes, b * block_bytes};
    team_.run([&](unsigned member) {
      detail::each_block_piece(detail::team_share(group, member, team_.size()), block_bytes, f);
    });
  }
  // A group: big enough that a DMA's and a launch's fixed cost (a few us)
  // stay small beside it (4 MiB moves in ~80 us at 50 GB/s), small enough
  // that the first DMA starts early in a copy of 64 MiB.
  static constexpr std::size_t group_bytes = std::size_t{4} << 20;
  // The ring's slots: the staged copier's ring depth to the device
  // (staged_tuning::ring_depth), enough for the DMA of one group, the
  // packing of the next and one in between.
  static constexpr std::size_t ring_slots = 4;

  block_step& step_;
  caching_pool pool_;
  thread_team team_;
  device_ref scratch_{};
  std::vector<std::int64_t> src_, dst_;
};

}  // namespace

std::unique_ptr<block_mover> make_block_mover(block_way w, block_step& step) {
  switch (w) {
    case block_way::loop: return std::make_unique<loop_mover>(step);
    case block_way::batch: return std::make_unique<batch_mover>(step);
    case block_way::kernel: return std::make_unique<kernel_mover>(step);
    case block_way::pack: return std::make_unique<pack_mover>(step);
  }
  throw std::invalid_argument("make_block_mover: no such way");
}

}  // namespace xfer::mem
