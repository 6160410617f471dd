#pragma once
// A host_resource adaptor that page-locks whatever its upstream hands out:
// allocate() takes a block from the upstream and registers it with CUDA
// (cudaHostRegister, portable), deallocate() unregisters it and gives it
// back. This is how a program pins buffers it did not allocate with CUDA
// (rmm/CCCL call the idea a registering or pinned adaptor).
//
// No CUDA header here: registration goes through two plain function
// pointers, by default the CUDA runtime's (libxfer_mem_cuda provides
// them), or any pair a caller injects (the driver API, or a test that makes
// registration fail).
//
// Blocks are requested page-aligned and in whole pages where the upstream can
// align that far, so no two registrations share a page (CUDA refuses to
// register a page twice). Over an upstream that cannot (pageable malloc),
// blocks may share pages and a second registration of a shared page fails
// with an allocation_error.
#include <cstddef>
#include <string>
#include <string_view>
#include <xfer/mem/resource.hpp>

namespace xfer::cuda {

struct register_functions {
  // Page-locks [p, p + bytes); returns an empty string on success, else the
  // error ("cudaErrorHostMemoryAlreadyRegistered: part or all of ...").
  std::string (*register_block)(void* p, std::size_t bytes) = nullptr;
  // Undoes register_block; never fails the caller.
  void (*unregister_block)(void* p) noexcept = nullptr;
  const char* name = "cudaHostRegister";  // for describe()
};

// cudaHostRegister(cudaHostRegisterPortable) / cudaHostUnregister through the
// CUDA runtime, on the calling thread's current device.
register_functions runtime_register_functions() noexcept;

class registering_resource final : public mem::host_resource {
 public:
  // `upstream` must outlive the adaptor.
  explicit registering_resource(mem::host_resource& upstream,
                                register_functions fns = runtime_register_functions()) noexcept;

  std::string_view kind() const noexcept override { return "registered"; }
  // The upstream's, page-locked.
  mem::properties props() const noexcept override;
  std::size_t max_alignment() const noexcept override { return upstream_.max_alignment(); }
  std::size_t natural_alignment() const noexcept override;
  std::string describe() const override;
  mem::host_resource& upstream() const noexcept { return upstream_; }

 private:
  // Throws mem::allocation_error with the byte count and the CUDA error; a
  // refused registration returns the block to the upstream first.
  void* do_allocate(std::size_t bytes, std::size_t alignment) override;
  void do_deallocate(void* p, std::size_t bytes, std::size_t alignment) noexcept override;
  bool page_granular() const noexcept;
  std::size_t upstream_bytes(std::size_t bytes) const noexcept;
  std::size_t upstream_alignment(std::size_t alignment) const noexcept;

  mem::host_resource& upstream_;
  register_functions fns_;
};

}  // namespace xfer::cuda
