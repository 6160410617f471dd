#pragma once
// What every Vulkan route shares: the point's buffers (host side by kind,
// device side in device-local memory), how core's poison and check of what a
// sample writes reach them, and the two ways of running a repetition's
// commands: recorded behind the timeline gate and timed by timestamps (the kind's memory is the
// device's own: host-coherent, host-cached, device-local-host-visible,
// imported), or, for plain pageable memory, staged by the application
// through a host-coherent buffer one command at a time by the wall clock.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>
#include <xfer/core/backend.hpp>
#include <xfer/core/sample_check.hpp>
#include <xfer/core/timing.hpp>
#include <xfer/mem/kinds.hpp>

#include "memory.hpp"
#include "timing.hpp"

namespace xfer::vulkan {

// One host buffer of a point. `buf` is what the device reads or writes: the
// kind's own memory (mapped), an import of `block`, or (staged) a
// host-coherent staging buffer the application copies `block` through.
struct host_side {
  std::unique_ptr<mem::host_resource> res;
  void* block = nullptr;
  std::size_t block_bytes = 0, block_align = 0;
  buffer buf;
  bool staged = false;

  host_side() = default;
  host_side(const host_side&) = delete;
  host_side& operator=(const host_side&) = delete;
  ~host_side();
  std::byte* data() const { return block ? static_cast<std::byte*>(block) : buf.mapped(); }
};

class vulkan_transfer : public transfer {
 public:
  ~vulkan_transfer() override;
  std::span<const sample_destination> places() const override;
  std::uint64_t place_bytes() const override { return spec_.bytes; }
  void reach_place(const sample_destination& d, place_access a,
                   const std::function<void(std::span<std::byte>)>& use) override;
  // Staged host memory lands in its staging buffer first: that is poisoned
  // too, so a copy that never ran cannot pass on what an earlier one left.
  void poison_place(const sample_destination& d) override;
  void run_step(std::size_t k) override;  // one op alone, finished before it returns
  first_use setup_costs() const override { return costs_; }
  clock_kind timer_kind() const override;
  double timer_resolution_s() const override;
  std::uint64_t bytes_per_rep() const override;
  sample run(std::size_t reps) override;

 protected:
  // One command of a repetition: recorded into its lane's command buffer.
  // pre/post: the application's staging copies around it (staged kinds).
  struct op {
    std::size_t lane = 0;
    std::function<void(VkCommandBuffer)> record;
    std::function<void()> pre, post;
  };

  // lanes: the queues the route's commands run on (copy or compute family).
  vulkan_transfer(const point_spec& p, const device_context& dev, const mem::kind_options& kinds,
                  std::vector<queue_ref> lanes);
  void set_ops(std::vector<op> ops);

  // Memory barrier between commands of one lane, so each runs after the
  // last has landed, as on an in-order stream.
  static void serialize(VkCommandBuffer cb);
  void copy_cmd(VkCommandBuffer cb, const buffer& src, const buffer& dst) const;

  // ---- data ----
  void fill_device(const buffer& b, std::uint64_t seed);
  void poison_device(const buffer& b);
  void poison_host(host_side& h);
  // The staging steps of a staged host side (no-ops otherwise).
  std::function<void()> stage_in(host_side& h) const;
  std::function<void()> stage_out(host_side& h) const;

  point_spec spec_;
  const device_context& dev_;
  std::unique_ptr<host_side> host_a_, host_b_;
  buffer dev_a_, dev_b_;
  bool staged_ = false;

 private:
  void allocate(const mem::kind_options& kinds);
  // cpu_reads: the CPU reads what lands there (d2h, rw): staged through
  // host-cached memory, not the uncached host-coherent kind.
  std::unique_ptr<host_side> make_host(const mem::kind_options& kinds, bool cpu_reads);
  // A buffer as the device sees it: copied out into host-cached memory (io).
  const buffer& copy_out(const buffer& b);
  void touch();
  const buffer& io(std::uint64_t bytes);  // staging for device buffers the CPU cannot map

  std::vector<queue_ref> lanes_;
  std::vector<op> ops_;
  std::unique_ptr<timeline_gate> gate_;
  std::unique_ptr<batch_timer> timer_;
  no_gate no_gate_;
  std::unique_ptr<timed_batches> loop_;
  buffer io_;
  first_use costs_;
};

// route copy
std::unique_ptr<transfer> make_copy_transfer(const point_spec& p, const device_context& dev,
                                             const mem::kind_options& kinds);
// route blocks-list (sweep --blocks)
std::unique_ptr<transfer> make_block_list_transfer(const point_spec& p, const device_context& dev,
                                                   const mem::kind_options& kinds);
// routes cpu-store(-nt), cpu-load(-nt); require_cpu_route throws skip_point where they cannot run
void require_cpu_route(const point_spec& p, const device_caps& caps);
// Why a cpu-* route can never take `kind` (only the BAR), or "".
std::string cpu_route_kind_gap(route_kind route, const std::string& kind);
std::unique_ptr<transfer> make_cpu_transfer(const point_spec& p, const device_context& dev);
// route kernel-host; require_kernel_host throws skip_point where it cannot run
class compute_pipeline;
void require_kernel_host(const point_spec& p, const device_caps& caps);
// Why kernel-host can never take `kind` (the shader reaches only mapped host memory), or "".
std::string kernel_host_kind_gap(const std::string& kind);
std::unique_ptr<transfer> make_kernel_transfer(const point_spec& p, const device_context& dev,
                                               const mem::kind_options& kinds, compute_pipeline& pipe);

}  // namespace xfer::vulkan
