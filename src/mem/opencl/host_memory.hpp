#pragma once
// The host side of an OpenCL transfer, in any of the backend's host memory
// kinds: xfer::mem's plain kinds (pageable, aligned, ...) and OpenCL's own
// (ALLOC_HOST_PTR and USE_HOST_PTR buffers, coarse and fine SVM), each with
// its rule for when the CPU may touch it.
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>
#include <xfer/mem/kinds.hpp>

#include "cl.hpp"
#include "platform.hpp"

namespace xfer::opencl {

class host_block {
 public:
  virtual ~host_block() = default;
  // The CPU's pointer; valid while open.
  std::byte* data() const noexcept { return data_; }
  std::size_t size() const noexcept { return size_; }
  // Make CPU access legal (map); a no-op for memory the CPU always owns.
  virtual void open() {}
  // Hand the memory back to the device (unmap) before a kernel touches it.
  virtual void close() {}
  // Whether a kernel can take this memory as an argument (a cl_mem or SVM).
  virtual bool kernel_visible() const noexcept { return false; }
  // std::invalid_argument where !kernel_visible().
  virtual void set_kernel_arg(cl_kernel k, cl_uint index) const;
  // The OpenCL object behind the memory, for commands that name it (migrate,
  // map): a cl_mem for the buffer kinds, an SVM pointer for the SVM kinds,
  // null for memory OpenCL does not know.
  virtual cl_mem buffer() const noexcept { return nullptr; }
  virtual void* svm_pointer() const noexcept { return nullptr; }

 protected:
  std::byte* data_ = nullptr;
  std::size_t size_ = 0;
};

// The OpenCL-only kinds, in report order (after mem::host_kind_names()).
const std::vector<std::string>& opencl_kind_names();
bool is_opencl_kind(std::string_view name);
std::string describe_opencl_kind(std::string_view name, const mem::kind_options& options);
// Empty when `device` can provide the kind, else why not.
std::string kind_unavailable_reason(std::string_view name, const device_caps& device);

// Allocates `bytes` of kind `name` (a core kind or an OpenCL one), closed for
// OpenCL kinds (call open() before the CPU touches it). Throws cl_error or
// mem::allocation_error when the memory cannot be had (an unknown kind
// included: the backend turns both into a skipped point).
std::unique_ptr<host_block> make_host_block(std::string_view name, std::size_t bytes, const context& ctx,
                                            const command_queue& queue, const mem::kind_options& options);

}  // namespace xfer::opencl
