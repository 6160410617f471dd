#pragma once
// The CUDA host memory kinds as std::pmr resources (in the spirit of rmm's and
// CCCL's resources): each declares its properties at compile time, throws
// mem::allocation_error with the byte count and the CUDA error on failure,
// and deallocates without throwing. Each works through an api, so cuda-rt
// and cuda-drv each allocate with their own calls.
#include <functional>
#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <memory>
#include <string>
#include <string_view>
#include <vector>
#include <xfer/mem/host_resources.hpp>
#include <xfer/mem/kinds.hpp>
#include <xfer/mem/resource.hpp>

#include "api.hpp"

namespace xfer::cuda {

class cuda_host_resource : public mem::host_resource {
 protected:
  explicit cuda_host_resource(api& a) : api_(a) {}
  // Alignment a power of two within max_alignment(), else allocation_error.
  void check_request(std::size_t bytes, std::size_t alignment) const;
  [[noreturn]] void fail(std::size_t bytes, const std::string& cause) const;
  // Whole pages from `upstream`, registered with the API; the upstream block
  // is returned when the registration is refused. For the registered and
  // pinned-fast kinds. `prepare`, when given, starts work on the block
  // (threads touching its pages, say) that runs while it is registered: the
  // handle it returns is released (its work finished) once the registration
  // has returned, before the block is given back on a failure.
  using preparation = std::function<std::shared_ptr<void>(void*, std::size_t)>;
  void* allocate_registered(mem::host_resource& upstream, std::size_t bytes, std::size_t alignment,
                            const preparation& prepare = {});
  void deallocate_registered(mem::host_resource& upstream, void* p, std::size_t bytes,
                             std::size_t alignment) noexcept;
  api& api_;
};

// Page-aligned pageable memory, then page-locked in place (cudaHostRegister /
// cuMemHostRegister): what a program does with buffers it did not allocate.
class registered_resource final : public cuda_host_resource {
 public:
  static constexpr mem::properties declared{.host_accessible = true, .device_accessible = false, .pinned = true};
  // alignment: at least a page (smaller is raised), so no two registrations share a page.
  explicit registered_resource(api& a, std::size_t alignment = 4096);
  std::string_view kind() const noexcept override { return "registered"; }
  mem::properties props() const noexcept override { return declared; }
  std::size_t max_alignment() const noexcept override { return upstream_.max_alignment(); }
  std::size_t natural_alignment() const noexcept override { return upstream_.natural_alignment(); }
  std::string describe() const override;

 private:
  void* do_allocate(std::size_t bytes, std::size_t alignment) override;
  void do_deallocate(void* p, std::size_t bytes, std::size_t alignment) noexcept override;
  mem::aligned_resource upstream_;
};

// Page-locked host memory from the API (cudaHostAlloc / cuMemHostAlloc),
// optionally write-combined and/or mapped into the device's address space.
// Every block starts on a page: the API promises no such thing (CUDA 13 handed
// out blocks at +0x200 into a page, depending on what the process had
// allocated before), so each block is one page longer than its whole pages
// and starts at the first page boundary inside it; a table maps the start
// back to what the API returned, for freeing and for the device's address.
// Pinning fast, for large buffers: huge-page anonymous memory whose pages
// several threads fault in at once (the kernel zeroes each page on first
// touch, which is most of what cudaHostAlloc spends its time on, on one
// thread), then one registration of the whole range. One registration, not
// one per chunk: registering each chunk as the threads finish it pinned
// faster, but cudaMemcpyAsync refused a copy spanning two registrations
// (invalid argument; bench/pin_probe.cpp, docs/decisions/0009-fast-pinning.md).
// Not one of the sweep's kinds (host_kind_names): the alloc
// study measures its first-time rate against cudaHostAlloc and
// cudaHostRegister, and a caching pool can grow through it.
class fast_pinned_resource final : public cuda_host_resource {
 public:
  static constexpr mem::properties declared{.host_accessible = true, .device_accessible = false, .pinned = true};
  // threads: how many fault pages in (0: one per hardware thread, at most 16).
  explicit fast_pinned_resource(api& a, unsigned threads = 0);
  std::string_view kind() const noexcept override { return "pinned-fast"; }
  mem::properties props() const noexcept override { return declared; }
  std::size_t max_alignment() const noexcept override { return upstream_.max_alignment(); }
  std::size_t natural_alignment() const noexcept override { return upstream_.natural_alignment(); }
  std::string describe() const override;

 private:
  void* do_allocate(std::size_t bytes, std::size_t alignment) override;
  void do_deallocate(void* p, std::size_t bytes, std::size_t alignment) noexcept override;
  mem::huge_page_resource upstream_;
  unsigned threads_;
};

class pinned_host_resource : public cuda_host_resource {
 public:
  ~pinned_host_resource() override;
  std::size_t max_alignment() const noexcept override;  // a page
  std::size_t natural_alignment() const noexcept override { return max_alignment(); }
  std::string describe() const override;
  // The address a kernel uses for a block of this resource (any address inside one).
  void* device_pointer(void* host) const;
  // Blocks handed out and not yet returned.
  std::size_t live_blocks() const;

 protected:
  pinned_host_resource(api& a, host_alloc_flags flags) : cuda_host_resource(a), flags_(flags) {}

 private:
  void* do_allocate(std::size_t bytes, std::size_t alignment) override;
  void do_deallocate(void* p, std::size_t bytes, std::size_t alignment) noexcept override;
  // What the API returned for the block holding `p`, or nullptr.
  void* base_of(const void* p) const;
  struct api_block {
    void* base;          // what the API returned
    std::size_t usable;  // bytes from the page-aligned start
  };
  host_alloc_flags flags_;
  mutable std::mutex mutex_;
  std::map<std::uintptr_t, api_block> blocks_;  // by page-aligned start
};

class pinned_resource final : public pinned_host_resource {
 public:
  static constexpr mem::properties declared{.host_accessible = true, .device_accessible = false, .pinned = true};
  explicit pinned_resource(api& a) : pinned_host_resource(a, {}) {}
  std::string_view kind() const noexcept override { return "pinned"; }
  mem::properties props() const noexcept override { return declared; }
};

class pinned_wc_resource final : public pinned_host_resource {
 public:
  static constexpr mem::properties declared{
      .host_accessible = true, .device_accessible = false, .pinned = true, .write_combined = true};
  explicit pinned_wc_resource(api& a) : pinned_host_resource(a, {.mapped = false, .write_combined = true}) {}
  std::string_view kind() const noexcept override { return "pinned-wc"; }
  mem::properties props() const noexcept override { return declared; }
};

// Pinned and mapped: kernels read and write it across the link (zero copy).
class mapped_resource final : public pinned_host_resource {
 public:
  static constexpr mem::properties declared{.host_accessible = true, .device_accessible = true, .pinned = true};
  explicit mapped_resource(api& a) : pinned_host_resource(a, {.mapped = true, .write_combined = false}) {}
  std::string_view kind() const noexcept override { return "mapped"; }
  mem::properties props() const noexcept override { return declared; }
};

// cudaMallocManaged / cuMemAllocManaged, advised to live in host memory and
// be accessed by the device: left to migrate, the pages would move to the
// device at the first copy, and every later "host-to-device" copy would be a
// device-to-device one. Never more than the device has free (an
// oversubscribed managed allocation can hang the GPU, not only this program).
class managed_resource final : public cuda_host_resource {
 public:
  static constexpr mem::properties declared{.host_accessible = true, .device_accessible = true, .pinned = false};
  static constexpr std::size_t alignment = 256;  // what cudaMalloc* promise
  explicit managed_resource(api& a) : cuda_host_resource(a) {}
  std::string_view kind() const noexcept override { return "managed"; }
  mem::properties props() const noexcept override { return declared; }
  std::size_t max_alignment() const noexcept override { return alignment; }
  std::size_t natural_alignment() const noexcept override { return alignment; }
  std::string describe() const override;

 private:
  void* do_allocate(std::size_t bytes, std::size_t alignment) override;
  void do_deallocate(void* p, std::size_t bytes, std::size_t alignment) noexcept override;
};

// The core's kinds (mem::host_kind_names) followed by the CUDA ones.
const std::vector<std::string>& host_kind_names();
// Kinds make_host_kind also makes that the sweep does not measure by default:
// "pinned-fast" (the alloc study's).
const std::vector<std::string>& extra_kind_names();
// nullptr for a name that is none of host_kind_names().
std::unique_ptr<mem::host_resource> make_host_kind(std::string_view name, api& a, const mem::kind_options& options);
// Why a kernel on a device with these attributes cannot address memory of
// this kind; empty when it can. Pinned blocks (pinned, pinned-wc, mapped,
// registered) are reachable wherever addressing is unified, as nvbandwidth's
// kernel copies assume; managed memory is by construction.
std::string device_access_gap(const mem::host_resource& r, const device_attributes& a);
// The address a kernel uses for `host`, a block of `r` (device_access_gap empty).
void* device_view(const mem::host_resource& r, api& a, void* host);

}  // namespace xfer::cuda
