#include "host_memory.hpp"

#include <fmt/format.h>
#include <stdexcept>
#include <xfer/mem/buffer.hpp>
#include <xfer/mem/error.hpp>
#include <xfer/mem/host_resources.hpp>
#include <xfer/mem/kind_registry.hpp>

namespace xfer::opencl {
namespace {

// USE_HOST_PTR memory is at least page-aligned: drivers zero-copy only page-
// aligned memory, and the copy kernel reads it in 16-byte vectors.
std::size_t use_host_ptr_alignment(const mem::kind_options& o) { return std::max<std::size_t>(o.alignment, 4096); }

class plain_block final : public host_block {
 public:
  plain_block(std::unique_ptr<mem::host_resource> kind, std::size_t bytes) : kind_(std::move(kind)) {
    buf_ = mem::buffer(*kind_, bytes, kind_->natural_alignment());
    data_ = buf_.bytes_ptr();
    size_ = bytes;
  }

 private:
  std::unique_ptr<mem::host_resource> kind_;
  mem::buffer buf_;
};

// A buffer object the host reaches by mapping it. Mapped, its pointer is the
// pinned (ALLOC_HOST_PTR) or the caller's own (USE_HOST_PTR) memory.
class mapped_buffer_block final : public host_block {
 public:
  mapped_buffer_block(bool use_host_ptr, std::size_t bytes, const context& ctx, const command_queue& q,
                      const mem::kind_options& options)
      : queue_(q) {
    size_ = bytes;
    cl_mem_flags flags = CL_MEM_READ_WRITE;
    void* host = nullptr;
    if (use_host_ptr) {
      backing_kind_ = std::make_unique<mem::aligned_resource>(use_host_ptr_alignment(options));
      backing_ = mem::buffer(*backing_kind_, bytes, use_host_ptr_alignment(options));
      host = backing_.data();
      flags |= CL_MEM_USE_HOST_PTR;
    } else {
      flags |= CL_MEM_ALLOC_HOST_PTR;
    }
    cl_int rc = CL_SUCCESS;
    mem_ = mem_object(clCreateBuffer(ctx.get(), flags, bytes, host, &rc));
    check(rc, "clCreateBuffer", fmt::format("{}, {} B", use_host_ptr ? "CL_MEM_USE_HOST_PTR" : "CL_MEM_ALLOC_HOST_PTR", bytes));
  }
  ~mapped_buffer_block() override {
    try {
      close();
    } catch (...) {  // releasing the buffer below still frees it
    }
  }
  void open() override {
    if (data_) return;
    cl_int rc = CL_SUCCESS;
    void* p = clEnqueueMapBuffer(queue_.get(), mem_.get(), CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, 0, size_, 0, nullptr,
                                 nullptr, &rc);
    check(rc, "clEnqueueMapBuffer", fmt::format("host block, {} B", size_));
    data_ = static_cast<std::byte*>(p);
  }
  void close() override {
    if (!data_) return;
    void* p = std::exchange(data_, nullptr);
    check(clEnqueueUnmapMemObject(queue_.get(), mem_.get(), p, 0, nullptr, nullptr), "clEnqueueUnmapMemObject",
          fmt::format("host block, {} B", size_));
    check(clFinish(queue_.get()), "clFinish", "after unmapping a host block");
  }
  bool kernel_visible() const noexcept override { return true; }
  void set_kernel_arg(cl_kernel k, cl_uint index) const override {
    const cl_mem m = mem_.get();
    check(clSetKernelArg(k, index, sizeof m, &m), "clSetKernelArg", fmt::format("arg {}: host cl_mem", index));
  }
  cl_mem buffer() const noexcept override { return mem_.get(); }

 private:
  command_queue queue_;
  std::unique_ptr<mem::aligned_resource> backing_kind_;
  mem::buffer backing_;  // outlives mem_ (declared before it)
  mem_object mem_;
};

class svm_block final : public host_block {
 public:
  svm_block(bool fine, std::size_t bytes, const context& ctx, const command_queue& q)
      : fine_(fine), ctx_(ctx), queue_(q) {
    size_ = bytes;
    const cl_svm_mem_flags flags = CL_MEM_READ_WRITE | (fine ? CL_MEM_SVM_FINE_GRAIN_BUFFER : 0);
    // Alignment 0: the device's default (its largest data type), as larger
    // values are not portable.
    svm_ = clSVMAlloc(ctx.get(), flags, bytes, 0);
    if (!svm_)
      throw cl_error(CL_MEM_OBJECT_ALLOCATION_FAILURE, "clSVMAlloc",
                     fmt::format("{}, {} B (returned NULL)", fine ? "fine-grained" : "coarse-grained", bytes));
  }
  ~svm_block() override {
    try {
      close();
      clFinish(queue_.get());
    } catch (...) {
    }
    clSVMFree(ctx_.get(), svm_);
  }
  void open() override {
    if (data_) return;
    if (!fine_)
      check(clEnqueueSVMMap(queue_.get(), CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, svm_, size_, 0, nullptr, nullptr),
            "clEnqueueSVMMap", fmt::format("{} B", size_));
    data_ = static_cast<std::byte*>(svm_);
  }
  void close() override {
    if (!data_) return;
    data_ = nullptr;
    if (fine_) return;
    check(clEnqueueSVMUnmap(queue_.get(), svm_, 0, nullptr, nullptr), "clEnqueueSVMUnmap",
          fmt::format("{} B", size_));
    check(clFinish(queue_.get()), "clFinish", "after clEnqueueSVMUnmap");
  }
  bool kernel_visible() const noexcept override { return true; }
  void set_kernel_arg(cl_kernel k, cl_uint index) const override {
    check(clSetKernelArgSVMPointer(k, index, svm_), "clSetKernelArgSVMPointer", fmt::format("arg {}", index));
  }
  void* svm_pointer() const noexcept override { return svm_; }

 private:
  bool fine_;
  context ctx_;
  command_queue queue_;
  void* svm_ = nullptr;
};

}  // namespace

// Callers check first (the backend skips a kernel route over such a kind
// before it allocates), so reaching this is a caller's mistake.
void host_block::set_kernel_arg(cl_kernel, cl_uint) const {
  throw std::invalid_argument(
      "a kernel reaches host memory only through a cl_mem or SVM (alloc-host-ptr, use-host-ptr, svm-*)");
}

const std::vector<std::string>& opencl_kind_names() {
  static const std::vector<std::string> names = mem::kind_names_of(mem::kind_maker::opencl);
  return names;
}

bool is_opencl_kind(std::string_view name) {
  for (const auto& n : opencl_kind_names())
    if (n == name) return true;
  return false;
}

std::string describe_opencl_kind(std::string_view name, const mem::kind_options& options) {
  if (name == "alloc-host-ptr")
    return "clCreateBuffer(CL_MEM_ALLOC_HOST_PTR), mapped once: the driver's pinned memory (the usual fast path)";
  if (name == "use-host-ptr")
    return fmt::format("clCreateBuffer(CL_MEM_USE_HOST_PTR) over {}-byte-aligned memory, mapped for host access",
                       use_host_ptr_alignment(options));
  if (name == "svm-coarse") return "clSVMAlloc, coarse-grained: the host touches it between clEnqueueSVMMap/Unmap";
  if (name == "svm-fine") return "clSVMAlloc(CL_MEM_SVM_FINE_GRAIN_BUFFER): shared by host and device without mapping";
  return "";
}

std::string kind_unavailable_reason(std::string_view name, const device_caps& device) {
  if (name == "svm-coarse" && !device.svm_coarse())
    return fmt::format("{} offers no coarse-grained buffer SVM ({}; SVM needs OpenCL 2.0+)", device.name, device.version);
  if (name == "svm-fine" && !device.svm_fine())
    return fmt::format("{} offers no fine-grained buffer SVM ({})", device.name, device.version);
  return "";
}

std::unique_ptr<host_block> make_host_block(std::string_view name, std::size_t bytes, const context& ctx,
                                            const command_queue& queue, const mem::kind_options& options) {
  if (name == "alloc-host-ptr" || name == "use-host-ptr")
    return std::make_unique<mapped_buffer_block>(name == "use-host-ptr", bytes, ctx, queue, options);
  if (name == "svm-coarse" || name == "svm-fine") return std::make_unique<svm_block>(name == "svm-fine", bytes, ctx, queue);
  auto kind = mem::make_host_kind(name, options);
  if (!kind) throw mem::allocation_error(std::string(name), bytes, fmt::format("unknown host memory kind '{}'", name));
  return std::make_unique<plain_block>(std::move(kind), bytes);
}

}  // namespace xfer::opencl
