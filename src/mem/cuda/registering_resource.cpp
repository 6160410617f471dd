#include <xfer/mem/cuda/registering_resource.hpp>

#include <algorithm>
#include <bit>
#include <cuda_runtime_api.h>
#include <fmt/format.h>
#include <limits>
#include <xfer/mem/error.hpp>
#include <xfer/mem/os.hpp>

namespace xfer::cuda {
namespace {

std::string runtime_register(void* p, std::size_t bytes) {
  const cudaError_t e = cudaHostRegister(p, bytes, cudaHostRegisterPortable);
  if (e == cudaSuccess) return {};
  (void)cudaGetLastError();  // a later launch check must not report this failure as its own
  return fmt::format("cudaHostRegister({} bytes at {}): {}: {}", bytes, p, cudaGetErrorName(e), cudaGetErrorString(e));
}

void runtime_unregister(void* p) noexcept {
  if (cudaHostUnregister(p) != cudaSuccess) (void)cudaGetLastError();
}

}  // namespace

register_functions runtime_register_functions() noexcept {
  return {&runtime_register, &runtime_unregister, "cudaHostRegister"};
}

registering_resource::registering_resource(mem::host_resource& upstream, register_functions fns) noexcept
    : upstream_(upstream), fns_(fns) {}

mem::properties registering_resource::props() const noexcept {
  mem::properties p = upstream_.props();
  p.pinned = true;
  return p;
}

bool registering_resource::page_granular() const noexcept { return upstream_.max_alignment() >= mem::page_size(); }

std::size_t registering_resource::natural_alignment() const noexcept {
  return page_granular() ? std::max(upstream_.natural_alignment(), mem::page_size()) : upstream_.natural_alignment();
}

std::size_t registering_resource::upstream_bytes(std::size_t bytes) const noexcept {
  if (!page_granular()) return bytes;
  const std::size_t page = mem::page_size();
  return (std::max<std::size_t>(bytes, 1) + page - 1) / page * page;
}

std::size_t registering_resource::upstream_alignment(std::size_t alignment) const noexcept {
  return page_granular() ? std::max(alignment, mem::page_size()) : alignment;
}

std::string registering_resource::describe() const {
  return fmt::format("{}, then {}", upstream_.describe(), fns_.name ? fns_.name : "registered");
}

void* registering_resource::do_allocate(std::size_t bytes, std::size_t alignment) {
  if (!std::has_single_bit(alignment))
    throw mem::allocation_error("registered", bytes, fmt::format("alignment {} is not a power of two", alignment));
  if (!fns_.register_block || !fns_.unregister_block)
    throw mem::allocation_error("registered", bytes, "no register/unregister functions were given");
  if (bytes > std::numeric_limits<std::size_t>::max() - mem::page_size())
    throw mem::allocation_error("registered", bytes, "size overflows the address space");
  const std::size_t length = upstream_bytes(bytes);
  const std::size_t align = upstream_alignment(alignment);
  void* p = nullptr;
  try {
    p = upstream_.allocate(length, align);
  } catch (const mem::allocation_error& e) {
    throw mem::allocation_error("registered", bytes, fmt::format("upstream {}: {}", upstream_.kind(), e.cause()));
  }
  std::string error;
  try {
    error = fns_.register_block(p, std::max<std::size_t>(length, 1));
  } catch (const std::exception& e) {
    error = e.what();
  }
  if (!error.empty()) {
    upstream_.deallocate(p, length, align);  // a refused registration leaks nothing
    throw mem::allocation_error("registered", bytes, error);
  }
  return p;
}

void registering_resource::do_deallocate(void* p, std::size_t bytes, std::size_t alignment) noexcept {
  fns_.unregister_block(p);
  upstream_.deallocate(p, upstream_bytes(bytes), upstream_alignment(alignment));
}

}  // namespace xfer::cuda
