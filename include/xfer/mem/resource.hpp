#pragma once
// Host memory kinds as std::pmr::memory_resource, each with declared
// properties (a static constexpr `declared` member that tests static_assert,
// and the same values at run time through properties()).
#include <cstddef>
#include <memory_resource>
#include <string>
#include <string_view>

namespace xfer::mem {

struct properties {
  bool host_accessible = true;
  bool device_accessible = false;  // a device can read/write it directly (zero copy)
  bool pinned = false;             // page-locked: DMA without a staging copy
  bool write_combined = false;     // fast CPU writes, very slow CPU reads
};

class host_resource : public std::pmr::memory_resource {
 public:
  // The kind's name as the CLI spells it ("pageable", "aligned", ...).
  virtual std::string_view kind() const noexcept = 0;
  virtual properties props() const noexcept = 0;
  // The largest alignment allocate() honours; larger requests throw.
  virtual std::size_t max_alignment() const noexcept = 0;
  // The alignment every returned pointer has at least (what the kind is about).
  virtual std::size_t natural_alignment() const noexcept = 0;
  // One line on how the memory is obtained, for `xferbench list`.
  virtual std::string describe() const = 0;

 protected:
  // A host resource frees only what it allocated itself: two are
  // interchangeable only when they are the same object. A resource that can
  // free another's memory overrides this.
  bool do_is_equal(const std::pmr::memory_resource& o) const noexcept override { return this == &o; }
};

}  // namespace xfer::mem
