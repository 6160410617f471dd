#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fmt/format.h>
#include <limits>
#include <stdexcept>
#include <xfer/mem/error.hpp>
#include <xfer/mem/more_resources.hpp>
#include <xfer/mem/os.hpp>

#include "alignment_check.hpp"
#include "page_mapping.hpp"

namespace xfer::mem {

// ---- over-aligned -------------------------------------------------------------

over_aligned_resource::over_aligned_resource(std::size_t alignment) : alignment_(alignment) {
  if (!std::has_single_bit(alignment) || alignment < sizeof(void*))
    throw std::invalid_argument(
        fmt::format("over-aligned: alignment {} must be a power of two of at least {}", alignment, sizeof(void*)));
}

std::string over_aligned_resource::describe() const {
  return fmt::format("malloc {} + 8 bytes extra, aligned inside at {}, base pointer kept in front", alignment_ - 1,
                     alignment_);
}

void* over_aligned_resource::do_allocate(std::size_t bytes, std::size_t alignment) {
  detail::check_alignment(*this, bytes, alignment);
  const std::size_t extra = alignment_ - 1 + sizeof(void*);
  if (bytes > std::numeric_limits<std::size_t>::max() - extra)
    throw allocation_error("over-aligned", bytes, "size overflows the address space");
  void* raw = os().malloc(bytes + extra);
  if (!raw) throw allocation_error("over-aligned", bytes, std::strerror(errno ? errno : ENOMEM));
  const auto user = (reinterpret_cast<std::uintptr_t>(raw) + sizeof(void*) + alignment_ - 1) &
                    ~(std::uintptr_t(alignment_) - 1);
  std::memcpy(reinterpret_cast<void*>(user - sizeof(void*)), &raw, sizeof(void*));
  return reinterpret_cast<void*>(user);
}

void over_aligned_resource::do_deallocate(void* p, std::size_t, std::size_t) noexcept {
  void* raw = nullptr;
  std::memcpy(&raw, static_cast<std::byte*>(p) - sizeof(void*), sizeof(void*));
  os().free(raw);
}

// ---- mmap ---------------------------------------------------------------------

std::size_t mmap_resource::max_alignment() const noexcept { return page_size(); }

std::string mmap_resource::describe() const { return "anonymous mmap: whole pages, returned to the OS on free"; }

void* mmap_resource::do_allocate(std::size_t bytes, std::size_t alignment) {
  detail::check_alignment(*this, bytes, alignment);
  return detail::map_pages("mmap", bytes, page_size());
}

void mmap_resource::do_deallocate(void* p, std::size_t bytes, std::size_t) noexcept {
  detail::unmap_pages(p, bytes, page_size());
}

// ---- numa ---------------------------------------------------------------------

std::vector<int> numa_nodes() {
  std::vector<int> nodes;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator("/sys/devices/system/node", ec)) {
    const std::string n = e.path().filename().string();
    if (n.size() > 4 && n.rfind("node", 0) == 0 && std::isdigit(static_cast<unsigned char>(n[4])))
      nodes.push_back(std::stoi(n.substr(4)));
  }
  if (nodes.empty()) nodes.push_back(0);
  std::sort(nodes.begin(), nodes.end());
  return nodes;
}

numa_resource::numa_resource(int node) : node_(node) {
  const auto nodes = numa_nodes();
  if (std::find(nodes.begin(), nodes.end(), node) == nodes.end())
    throw std::invalid_argument(fmt::format("numa: node {} does not exist here (nodes: {})", node, nodes.size()));
}

std::size_t numa_resource::max_alignment() const noexcept { return page_size(); }

std::string numa_resource::describe() const { return fmt::format("mmap + mbind(MPOL_BIND) to NUMA node {}", node_); }

void* numa_resource::do_allocate(std::size_t bytes, std::size_t alignment) {
  detail::check_alignment(*this, bytes, alignment);
  void* p = detail::map_pages("numa", bytes, page_size());
  constexpr int mpol_bind = 2;  // <linux/mempolicy.h>
  constexpr unsigned bits = 8 * sizeof(unsigned long);
  std::vector<unsigned long> mask(node_ / bits + 1, 0);
  mask[node_ / bits] = 1ul << (node_ % bits);
  // maxnode counts one past the highest bit the kernel should read.
  const long rc = os().mbind(p, detail::mapped_length(bytes, page_size()), mpol_bind, mask.data(), mask.size() * bits + 1, 0);
  // A kernel built without NUMA has one node: binding to node 0 is a no-op there.
  if (rc != 0 && !(errno == ENOSYS && node_ == 0)) {
    const int err = errno;
    detail::unmap_pages(p, bytes, page_size());
    throw allocation_error("numa", bytes, fmt::format("mbind to node {}: {}", node_, std::strerror(err)));
  }
  return p;
}

void numa_resource::do_deallocate(void* p, std::size_t bytes, std::size_t) noexcept {
  detail::unmap_pages(p, bytes, page_size());
}

}  // namespace xfer::mem
