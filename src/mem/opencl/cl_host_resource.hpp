#pragma once
// OpenCL's own host memory kinds (alloc-host-ptr, use-host-ptr, svm-coarse,
// svm-fine) as std::pmr resources, for the studies that take any
// mem::host_resource (the CPU side, the allocator study). Each allocation is
// one buffer object (or SVM block) mapped for the host when it is made and
// kept mapped, with its object alive, until it is deallocated: while mapped
// it is the host's to read and write, which is what a resource promises.
#include <atomic>
#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <xfer/mem/kinds.hpp>
#include <xfer/mem/resource.hpp>

#include "cl.hpp"
#include "host_memory.hpp"
#include "platform.hpp"

namespace xfer::opencl {

// Whether memory of `kind` on a device of `device_type` ("gpu", "cpu", ...)
// from the platform with token `platform_token` is page-locked: only where
// the vendor documents ALLOC_HOST_PTR + map as the way to pinned memory for
// its GPUs (NVIDIA's OpenCL Best Practices Guide, "Pinned Memory"; AMD's
// OpenCL optimisation guide). Elsewhere nothing says so, and on a CPU device
// (PoCL) it is ordinary memory.
bool documented_pinned(std::string_view kind, std::string_view platform_token, std::string_view device_type);

class cl_host_resource final : public mem::host_resource {
 public:
  // Every pointer is at least page-aligned (what drivers need to use memory
  // in place); larger alignments up to a huge page are honoured by padding.
  static constexpr std::size_t natural = 4096;
  static constexpr std::size_t largest = std::size_t{2} << 20;

  // `kind` is one of opencl_kind_names() that `device` offers. `pinned` is
  // the caller's judgement of whether the platform documents this kind as
  // page-locked (see opencl_backend::host_memory). Creates its own context
  // and queue, so it outlives nothing it depends on; or works in `ctx` when
  // given (the staged step's: its staging buffers then belong to the context
  // its copies run in, as NVIDIA's guide has pinned memory used).
  cl_host_resource(std::string kind, const device_caps& device, bool pinned, mem::kind_options options,
                   context ctx = {});
  ~cl_host_resource() override;  // frees what callers did not (unmap, release)
  cl_host_resource(const cl_host_resource&) = delete;
  cl_host_resource& operator=(const cl_host_resource&) = delete;

  std::string_view kind() const noexcept override { return kind_; }
  mem::properties props() const noexcept override;
  std::size_t max_alignment() const noexcept override { return largest; }
  std::size_t natural_alignment() const noexcept override { return natural; }
  std::string describe() const override;
  // Allocations not yet deallocated (for tests: frees must be clean).
  std::size_t live() const;

 private:
  void* do_allocate(std::size_t bytes, std::size_t alignment) override;
  void do_deallocate(void* p, std::size_t bytes, std::size_t alignment) noexcept override;

  std::unique_ptr<host_block> make_open(std::size_t bytes);

  std::string kind_;
  device_caps device_;
  bool pinned_;
  mem::kind_options options_;
  std::atomic<bool> driver_page_aligns_{true};  // until a mapping is seen off a page boundary
  // Before the blocks: destroyed after them, so unmapping still has its queue.
  context ctx_;
  command_queue queue_;
  mutable std::mutex m_;
  std::unordered_map<void*, std::unique_ptr<host_block>> blocks_;  // by the pointer handed out
};

}  // namespace xfer::opencl
