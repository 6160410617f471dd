#pragma once
// A move-only owner of one allocation from a memory_resource.
#include <cstddef>
#include <memory_resource>
#include <utility>

namespace xfer::mem {

class buffer {
 public:
  buffer() = default;
  buffer(std::pmr::memory_resource& r, std::size_t bytes, std::size_t alignment)
      : resource_(&r), data_(r.allocate(bytes, alignment)), bytes_(bytes), alignment_(alignment) {}
  buffer(buffer&& o) noexcept { swap(o); }
  buffer& operator=(buffer&& o) noexcept {
    buffer tmp(std::move(o));
    swap(tmp);
    return *this;
  }
  buffer(const buffer&) = delete;
  buffer& operator=(const buffer&) = delete;
  ~buffer() {
    if (data_) resource_->deallocate(data_, bytes_, alignment_);
  }

  void* data() const noexcept { return data_; }
  std::byte* bytes_ptr() const noexcept { return static_cast<std::byte*>(data_); }
  std::size_t size() const noexcept { return bytes_; }

 private:
  void swap(buffer& o) noexcept {
    std::swap(resource_, o.resource_);
    std::swap(data_, o.data_);
    std::swap(bytes_, o.bytes_);
    std::swap(alignment_, o.alignment_);
  }
  std::pmr::memory_resource* resource_ = nullptr;
  void* data_ = nullptr;
  std::size_t bytes_ = 0;
  std::size_t alignment_ = 1;
};

}  // namespace xfer::mem
