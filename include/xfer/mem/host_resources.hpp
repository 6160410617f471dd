#pragma once
// The host memory kinds every machine has.
#include <cstddef>
#include <xfer/mem/resource.hpp>

namespace xfer::mem {

// Plain malloc: what most programs hand to a copy API.
class pageable_resource final : public host_resource {
 public:
  static constexpr properties declared{};
  std::string_view kind() const noexcept override { return "pageable"; }
  properties props() const noexcept override { return declared; }
  std::size_t max_alignment() const noexcept override;
  std::size_t natural_alignment() const noexcept override { return max_alignment(); }
  std::string describe() const override;

 private:
  void* do_allocate(std::size_t bytes, std::size_t alignment) override;
  void do_deallocate(void* p, std::size_t bytes, std::size_t alignment) noexcept override;
};

// malloc'd, then moved `offset` bytes past a page boundary, so the buffer
// starts on no page and (unless offset is a multiple of 64) no cache line: the
// worst case a driver must stage (seeds 000/003).
class unaligned_resource final : public host_resource {
 public:
  static constexpr properties declared{};
  static constexpr std::size_t default_offset = 16;  // keeps std::pmr's default alignment (16) valid
  explicit unaligned_resource(std::size_t offset = default_offset);  // 1..4095, not a multiple of 64
  std::string_view kind() const noexcept override { return "pageable-unaligned"; }
  properties props() const noexcept override { return declared; }
  std::size_t max_alignment() const noexcept override;  // largest power of two dividing offset
  std::size_t natural_alignment() const noexcept override { return max_alignment(); }
  std::size_t offset() const noexcept { return offset_; }
  std::string describe() const override;

 private:
  void* do_allocate(std::size_t bytes, std::size_t alignment) override;
  void do_deallocate(void* p, std::size_t bytes, std::size_t alignment) noexcept override;
  std::size_t offset_;
};

// posix_memalign at a fixed alignment (4096 by default: one page).
class aligned_resource final : public host_resource {
 public:
  static constexpr properties declared{};
  static constexpr std::size_t default_alignment = 4096;
  // 1 GiB, the largest page size (x86-64, arm64): no page, DMA engine or
  // cache needs coarser, and each block costs up to its alignment again in
  // address space, so anything larger is a mistake (a unit, a typo) that
  // would otherwise surface as a baffling out-of-memory at allocation.
  static constexpr std::size_t alignment_bound = std::size_t{1} << 30;
  // A power of two from sizeof(void*) to alignment_bound.
  explicit aligned_resource(std::size_t alignment = default_alignment);
  std::string_view kind() const noexcept override { return "aligned"; }
  properties props() const noexcept override { return declared; }
  std::size_t max_alignment() const noexcept override;
  std::size_t natural_alignment() const noexcept override { return alignment_; }
  std::string describe() const override;

 private:
  void* do_allocate(std::size_t bytes, std::size_t alignment) override;
  void do_deallocate(void* p, std::size_t bytes, std::size_t alignment) noexcept override;
  std::size_t alignment_;
};

// mmap'd at a 2 MiB boundary with MADV_HUGEPAGE, so transparent huge pages can
// back it (fewer TLB misses, fewer pages for a driver to pin).
class huge_page_resource final : public host_resource {
 public:
  static constexpr properties declared{};
  static constexpr std::size_t huge_page = std::size_t{2} << 20;
  std::string_view kind() const noexcept override { return "huge"; }
  properties props() const noexcept override { return declared; }
  std::size_t max_alignment() const noexcept override { return huge_page; }
  std::size_t natural_alignment() const noexcept override { return huge_page; }
  std::string describe() const override;

 private:
  void* do_allocate(std::size_t bytes, std::size_t alignment) override;
  void do_deallocate(void* p, std::size_t bytes, std::size_t alignment) noexcept override;
};

}  // namespace xfer::mem
