#pragma once
// The allocator library's other strategies (issue 7, seed 001): the custom
// over-allocate-and-align method, plain page mappings, and NUMA-bound memory.
#include <cstddef>
#include <string>
#include <xfer/mem/host_resources.hpp>

namespace xfer::mem {

// The method people write by hand when no aligned allocator is at hand:
// malloc `alignment - 1 + sizeof(void*)` extra bytes, align inside, keep the
// base pointer just in front of the returned one for free().
class over_aligned_resource final : public host_resource {
 public:
  static constexpr properties declared{};
  explicit over_aligned_resource(std::size_t alignment = 4096);  // power of two >= sizeof(void*)
  std::string_view kind() const noexcept override { return "over-aligned"; }
  properties props() const noexcept override { return declared; }
  std::size_t max_alignment() const noexcept override { return alignment_; }
  std::size_t natural_alignment() const noexcept override { return alignment_; }
  std::string describe() const override;

 private:
  void* do_allocate(std::size_t bytes, std::size_t alignment) override;
  void do_deallocate(void* p, std::size_t bytes, std::size_t alignment) noexcept override;
  std::size_t alignment_;
};

// Anonymous page mappings straight from the kernel: every allocation is
// whole pages, returned to the OS on free (no allocator cache in between).
class mmap_resource final : public host_resource {
 public:
  static constexpr properties declared{};
  std::string_view kind() const noexcept override { return "mmap"; }
  properties props() const noexcept override { return declared; }
  std::size_t max_alignment() const noexcept override;
  std::size_t natural_alignment() const noexcept override { return max_alignment(); }
  std::string describe() const override;

 private:
  void* do_allocate(std::size_t bytes, std::size_t alignment) override;
  void do_deallocate(void* p, std::size_t bytes, std::size_t alignment) noexcept override;
};

// Pages bound to one NUMA node (mbind MPOL_BIND), so a buffer sits next to
// the CPU socket and PCIe root that use it. Uses the kernel's mbind system
// call directly: no libnuma needed.
class numa_resource final : public host_resource {
 public:
  static constexpr properties declared{};
  // Throws std::invalid_argument when the node does not exist here.
  explicit numa_resource(int node = 0);
  std::string_view kind() const noexcept override { return "numa"; }
  properties props() const noexcept override { return declared; }
  std::size_t max_alignment() const noexcept override;
  std::size_t natural_alignment() const noexcept override { return max_alignment(); }
  std::string describe() const override;
  int node() const noexcept { return node_; }

 private:
  void* do_allocate(std::size_t bytes, std::size_t alignment) override;
  void do_deallocate(void* p, std::size_t bytes, std::size_t alignment) noexcept override;
  int node_;
};

// NUMA nodes the kernel reports (/sys/devices/system/node/nodeN); {0} on a
// kernel without NUMA support.
std::vector<int> numa_nodes();

}  // namespace xfer::mem
