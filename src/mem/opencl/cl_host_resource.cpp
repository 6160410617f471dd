#include "cl_host_resource.hpp"

#include <algorithm>
#include <bit>
#include <cstdint>
#include <fmt/format.h>
#include <stdexcept>
#include <xfer/mem/error.hpp>
#include <xfer/mem/opencl/host_kinds.hpp>

#include "platform.hpp"

namespace xfer::opencl {

bool documented_pinned(std::string_view kind, std::string_view platform_token, std::string_view device_type) {
  return kind == "alloc-host-ptr" && device_type == "gpu" && (platform_token == "nvidia" || platform_token == "amd");
}

const std::vector<std::string>& opencl_host_kind_names() { return opencl_kind_names(); }

std::unique_ptr<mem::host_resource> make_opencl_host_kind(std::string_view name, std::string_view platform, int device,
                                                          const mem::kind_options& options) {
  if (auto plain = mem::make_host_kind(name, options)) return plain;  // no OpenCL needed
  if (!is_opencl_kind(name)) return nullptr;
  const auto [p, caps] = find_device(platform, device);
  if (const std::string why = kind_unavailable_reason(name, caps); !why.empty())
    throw std::runtime_error(fmt::format("{} memory on {}: {}", name, caps.name, why));
  return std::make_unique<cl_host_resource>(std::string(name), caps, documented_pinned(name, p.token, caps.type),
                                            options);
}

cl_host_resource::cl_host_resource(std::string kind, const device_caps& device, bool pinned, mem::kind_options options,
                                   context ctx)
    : kind_(std::move(kind)), device_(device), pinned_(pinned), options_(options), ctx_(std::move(ctx)) {
  if (!ctx_) {
    cl_int rc = CL_SUCCESS;
    ctx_ = context(clCreateContext(nullptr, 1, &device_.id, nullptr, nullptr, &rc));
    check(rc, "clCreateContext", fmt::format("{} memory on {}", kind_, device_.name));
  }
  queue_ = make_queue(ctx_, device_, false);
}

cl_host_resource::~cl_host_resource() {
  std::lock_guard lock(m_);
  blocks_.clear();
}

mem::properties cl_host_resource::props() const noexcept {
  mem::properties p;
  p.host_accessible = true;
  // Kept mapped for its whole life, the memory is the host's alone: OpenCL
  // forbids a kernel the mapped region. Fine-grained SVM is the exception, as
  // host and device may share it at any time (with this resource's context).
  p.device_accessible = kind_ == "svm-fine";
  p.pinned = pinned_;
  // Never write-combined: none of these is created with CL_MEM_HOST_WRITE_ONLY,
  // the hint some drivers answer with write-combined pages.
  p.write_combined = false;
  return p;
}

std::string cl_host_resource::describe() const {
  std::string how;
  if (kind_ == "alloc-host-ptr")
    how = fmt::format("clCreateBuffer(CL_MEM_ALLOC_HOST_PTR), memory the runtime allocates, {}",
                      pinned_ ? "page-locked (the platform documents it as its pinned path)"
                              : "not documented as page-locked for this device");
  else if (kind_ == "svm-fine")
    how = "clSVMAlloc(CL_MEM_SVM_FINE_GRAIN_BUFFER), shared by host and device with no mapping";
  else
    how = describe_opencl_kind(kind_, options_);
  return fmt::format("{}; {} from allocate to deallocate ({})", how, kind_ == "svm-fine" ? "held" : "kept mapped",
                     device_.name);
}

std::size_t cl_host_resource::live() const {
  std::lock_guard lock(m_);
  return blocks_.size();
}

std::unique_ptr<host_block> cl_host_resource::make_open(std::size_t bytes) {
  auto b = make_host_block(kind_, bytes, ctx_, queue_, options_);
  b->open();
  return b;
}

void* cl_host_resource::do_allocate(std::size_t bytes, std::size_t alignment) {
  if (!std::has_single_bit(alignment) || alignment > largest)
    throw mem::allocation_error(kind_, bytes,
                                fmt::format("alignment {} is not a power of two up to {}", alignment, largest));
  if (bytes > device_.max_alloc_bytes)
    throw mem::allocation_error(
        kind_, bytes, fmt::format("exceeds the device's CL_DEVICE_MAX_MEM_ALLOC_SIZE = {} B", device_.max_alloc_bytes));
  const std::size_t align = std::max(alignment, natural);
  // OpenCL has no empty buffer; one byte gives every zero-size request its own pointer.
  const std::size_t size = std::max<std::size_t>(bytes, 1);
  // OpenCL promises no alignment for a mapping (PoCL's are 128-byte aligned,
  // NVIDIA's pinned ones page-aligned): where the driver's pointer falls
  // short, a block larger by align - 1 bytes holds an aligned start. Larger
  // than a page is never expected; a page is until the driver misses once.
  const bool pad = align > natural || !driver_page_aligns_.load(std::memory_order_relaxed);
  if (pad && size > device_.max_alloc_bytes - (align - 1))
    throw mem::allocation_error(kind_, bytes,
                                fmt::format("padding it to alignment {} exceeds CL_DEVICE_MAX_MEM_ALLOC_SIZE", align));
  std::unique_ptr<host_block> block;
  try {
    block = make_open(pad ? size + align - 1 : size);
    if (!pad && reinterpret_cast<std::uintptr_t>(block->data()) % align != 0) {
      driver_page_aligns_.store(false, std::memory_order_relaxed);
      block.reset();
      block = make_open(size + align - 1);
    }
  } catch (const cl_error& e) {
    throw mem::allocation_error(kind_, bytes, e.what());
  }
  const auto at = reinterpret_cast<std::uintptr_t>(block->data());
  std::byte* p = block->data() + (align - at % align) % align;
  std::lock_guard lock(m_);
  blocks_.emplace(p, std::move(block));
  return p;
}

void cl_host_resource::do_deallocate(void* p, std::size_t, std::size_t) noexcept {
  std::unique_ptr<host_block> block;
  {
    std::lock_guard lock(m_);
    auto it = blocks_.find(p);
    if (it == blocks_.end()) return;  // not ours: nothing we may free
    block = std::move(it->second);
    blocks_.erase(it);
  }
  // Outside the lock: unmapping waits for the queue. The block's destructor
  // swallows errors, since deallocation cannot report them.
  block.reset();
}

}  // namespace xfer::opencl
