#include "memory.hpp"

#include <algorithm>
#include <bit>
#include <fmt/format.h>
#include <utility>
#include <xfer/core/errors.hpp>
#include <xfer/mem/kind_registry.hpp>

namespace xfer::vulkan {
namespace {

constexpr VkMemoryPropertyFlags HV = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT;
constexpr VkMemoryPropertyFlags HC = VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
constexpr VkMemoryPropertyFlags CACHED = VK_MEMORY_PROPERTY_HOST_CACHED_BIT;
constexpr VkMemoryPropertyFlags DL = VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT;

struct wish {
  VkMemoryPropertyFlags need;
  VkMemoryPropertyFlags avoid;   // flags that make it another kind, where a type without them exists
  VkMemoryPropertyFlags prefer;  // nice to have
};

wish wish_for(mem_class c) {
  switch (c) {
    case mem_class::host_coherent: return {HV | HC, DL | CACHED, 0};
    case mem_class::host_cached: return {HV | CACHED, DL, HC};
    case mem_class::device_local_host_visible: return {DL | HV, 0, HC};
    case mem_class::device: return {DL, HV, 0};
  }
  return {};
}

const char* class_text(mem_class c) {
  switch (c) {
    case mem_class::host_coherent: return "HOST_VISIBLE|HOST_COHERENT";
    case mem_class::host_cached: return "HOST_VISIBLE|HOST_CACHED";
    case mem_class::device_local_host_visible: return "DEVICE_LOCAL|HOST_VISIBLE";
    case mem_class::device: return "DEVICE_LOCAL";
  }
  return "?";
}

std::uint64_t round_up(std::uint64_t n, std::uint64_t to) { return (n + to - 1) / to * to; }

}  // namespace

const std::vector<std::string>& vulkan_kind_names() {
  static const std::vector<std::string> names = mem::kind_names_of(mem::kind_maker::vulkan);
  return names;
}

bool is_vulkan_kind(std::string_view kind) {
  const auto& n = vulkan_kind_names();
  return std::find(n.begin(), n.end(), kind) != n.end();
}

std::optional<mem_class> kind_class(std::string_view kind) {
  if (kind == "host-coherent") return mem_class::host_coherent;
  if (kind == "host-cached") return mem_class::host_cached;
  if (kind == "device-local-host-visible") return mem_class::device_local_host_visible;
  return std::nullopt;
}

std::string kind_unavailable_reason(std::string_view kind, const device_caps& c) {
  if (kind == "imported")
    return c.host_import ? "" : "the device does not offer VK_EXT_external_memory_host (host memory cannot be imported)";
  if (auto cls = kind_class(kind); cls && !find_memory_type(c, *cls))
    return fmt::format("the device has no {} memory type", class_text(*cls));
  return "";
}

std::string describe_kind(std::string_view kind) {
  if (kind == "host-coherent")
    return "host memory the device reads over the link, HOST_VISIBLE|HOST_COHERENT and uncached where the device has "
           "such a type (write-combined on NVIDIA)";
  if (kind == "host-cached") return "host memory the device reads over the link, HOST_VISIBLE|HOST_CACHED (CPU reads are cached)";
  if (kind == "device-local-host-visible")
    return "device memory the CPU maps, DEVICE_LOCAL|HOST_VISIBLE (the BAR on a discrete GPU; on a CPU device such as "
           "lavapipe it is ordinary host memory)";
  if (kind == "imported")
    return "page-aligned pageable memory imported with VK_EXT_external_memory_host (the pointer and size must be "
           "multiples of the driver's minImportedHostPointerAlignment)";
  return "";
}

std::string memory_flags_text(VkMemoryPropertyFlags f) {
  std::string s;
  auto add = [&](VkMemoryPropertyFlags bit, const char* name) {
    if (!(f & bit)) return;
    if (!s.empty()) s += '|';
    s += name;
  };
  add(DL, "DEVICE_LOCAL");
  add(HV, "HOST_VISIBLE");
  add(HC, "HOST_COHERENT");
  add(CACHED, "HOST_CACHED");
  add(VK_MEMORY_PROPERTY_LAZILY_ALLOCATED_BIT, "LAZILY_ALLOCATED");
  return s.empty() ? "none" : s;
}

std::optional<std::uint32_t> find_memory_type(const device_caps& c, mem_class cls, std::uint32_t allowed) {
  const wish w = wish_for(cls);
  std::optional<std::uint32_t> best;
  int best_score = -1;
  for (std::uint32_t i = 0; i < c.memory.memoryTypeCount; ++i) {
    if (!(allowed & (1u << i))) continue;
    const VkMemoryPropertyFlags f = c.memory.memoryTypes[i].propertyFlags;
    if ((f & w.need) != w.need) continue;
    // Fewest unwanted flags first, then the preferred ones; the lowest index
    // wins a tie (the spec orders types by the driver's preference).
    const int score = 4 * (std::popcount(w.avoid) - std::popcount(f & w.avoid)) + std::popcount(f & w.prefer);
    if (score > best_score) {
      best = i;
      best_score = score;
    }
  }
  return best;
}

// ---- buffer ----

buffer::~buffer() { release(); }

buffer::buffer(buffer&& o) noexcept { *this = std::move(o); }

buffer& buffer::operator=(buffer&& o) noexcept {
  if (this != &o) {
    release();
    dev_ = std::exchange(o.dev_, VK_NULL_HANDLE);
    buf_ = std::exchange(o.buf_, VK_NULL_HANDLE);
    mem_ = std::exchange(o.mem_, VK_NULL_HANDLE);
    map_ = std::exchange(o.map_, nullptr);
    size_ = std::exchange(o.size_, 0);
    flags_ = o.flags_;
    type_ = o.type_;
  }
  return *this;
}

void buffer::release() noexcept {
  if (!dev_) return;
  const api& a = vk();
  if (map_) a.vkUnmapMemory(dev_, mem_);
  map_ = nullptr;
  destroy_handle(dev_, buf_, a.vkDestroyBuffer);
  destroy_handle(dev_, mem_, a.vkFreeMemory);
  dev_ = VK_NULL_HANDLE;
}

namespace {

constexpr VkBufferUsageFlags usage =
    VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT | VK_BUFFER_USAGE_STORAGE_BUFFER_BIT;

// Concurrent between the device's families (a copy engine's and the compute
// family): the data helpers and the routes may then use a buffer on either
// without transferring its ownership.
void share(VkBufferCreateInfo& bi, const device_context& dev) {
  const auto& f = dev.families();
  if (f.size() > 1) {
    bi.sharingMode = VK_SHARING_MODE_CONCURRENT;
    bi.queueFamilyIndexCount = static_cast<std::uint32_t>(f.size());
    bi.pQueueFamilyIndices = f.data();
  } else {
    bi.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
  }
}

}  // namespace

buffer buffer::allocate(const device_context& dev, std::uint64_t bytes, mem_class cls) {
  const api& a = vk();
  const device_caps& c = dev.caps();
  buffer b;
  b.dev_ = dev.get();
  b.size_ = round_up(std::max<std::uint64_t>(bytes, 1), 16);
  VkBufferCreateInfo bi{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
  bi.size = b.size_;
  bi.usage = usage;
  share(bi, dev);
  check(a.vkCreateBuffer(b.dev_, &bi, nullptr, &b.buf_), "vkCreateBuffer", fmt::format("{} B", b.size_));
  VkMemoryRequirements req{};
  a.vkGetBufferMemoryRequirements(b.dev_, b.buf_, &req);
  const auto type = find_memory_type(c, cls, req.memoryTypeBits);
  if (!type) throw skip_point(fmt::format("the device has no {} memory type for a buffer", class_text(cls)));
  const VkMemoryType& t = c.memory.memoryTypes[*type];
  const std::uint64_t heap = c.memory.memoryHeaps[t.heapIndex].size;
  if (req.size > heap)
    throw skip_point(fmt::format("{} B of {} memory does not fit its heap {} of {} B", req.size, class_text(cls),
                                 t.heapIndex, heap));
  if (c.max_alloc_bytes && req.size > c.max_alloc_bytes)
    throw skip_point(fmt::format("{} B is more than one allocation may be (maxMemoryAllocationSize {} B)", req.size,
                                 c.max_alloc_bytes));
  b.type_ = *type;
  b.flags_ = t.propertyFlags;
  VkMemoryAllocateInfo ai{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
  ai.allocationSize = req.size;
  ai.memoryTypeIndex = *type;
  check(a.vkAllocateMemory(b.dev_, &ai, nullptr, &b.mem_), "vkAllocateMemory",
        fmt::format("{} B of type {} ({})", req.size, *type, memory_flags_text(t.propertyFlags)));
  check(a.vkBindBufferMemory(b.dev_, b.buf_, b.mem_, 0), "vkBindBufferMemory");
  // Device buffers are never mapped, even where their type is host-visible
  // (lavapipe's only type is): the data helpers then reach them through a
  // copy, as on a discrete GPU, and CI runs that path.
  if ((b.flags_ & HV) && cls != mem_class::device) {
    void* p = nullptr;
    check(a.vkMapMemory(b.dev_, b.mem_, 0, VK_WHOLE_SIZE, 0, &p), "vkMapMemory",
          fmt::format("{} B of {}", req.size, memory_flags_text(b.flags_)));
    b.map_ = static_cast<std::byte*>(p);
  }
  return b;
}

buffer buffer::import(const device_context& dev, void* p, std::uint64_t bytes) {
  const api& a = vk();
  const device_caps& c = dev.caps();
  if (!c.host_import || !a.vkGetMemoryHostPointerPropertiesEXT) throw skip_point(kind_unavailable_reason("imported", c));
  const std::uint64_t align = c.import_alignment;
  const auto addr = reinterpret_cast<std::uintptr_t>(p);
  if (align && (addr % align || bytes % align))
    throw skip_point(fmt::format(
        "VK_EXT_external_memory_host imports only a pointer and size that are multiples of "
        "minImportedHostPointerAlignment ({} B); this pointer is {} B past such a boundary and the size {} B is {} B past one",
        align, addr % align, bytes, bytes % align));
  constexpr auto handle = VK_EXTERNAL_MEMORY_HANDLE_TYPE_HOST_ALLOCATION_BIT_EXT;
  VkMemoryHostPointerPropertiesEXT props{VK_STRUCTURE_TYPE_MEMORY_HOST_POINTER_PROPERTIES_EXT};
  check(a.vkGetMemoryHostPointerPropertiesEXT(dev.get(), handle, p, &props), "vkGetMemoryHostPointerPropertiesEXT");
  buffer b;
  b.dev_ = dev.get();
  b.size_ = bytes;
  VkExternalMemoryBufferCreateInfo ext{VK_STRUCTURE_TYPE_EXTERNAL_MEMORY_BUFFER_CREATE_INFO};
  ext.handleTypes = handle;
  VkBufferCreateInfo bi{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
  bi.pNext = &ext;
  bi.size = bytes;
  bi.usage = usage;
  share(bi, dev);
  check(a.vkCreateBuffer(b.dev_, &bi, nullptr, &b.buf_), "vkCreateBuffer", fmt::format("imported, {} B", bytes));
  VkMemoryRequirements req{};
  a.vkGetBufferMemoryRequirements(b.dev_, b.buf_, &req);
  // Host-coherent first: importing is for memory the CPU keeps using.
  auto type = find_memory_type(c, mem_class::host_coherent, req.memoryTypeBits & props.memoryTypeBits);
  if (!type) type = find_memory_type(c, mem_class::host_cached, req.memoryTypeBits & props.memoryTypeBits);
  if (!type)
    throw skip_point(fmt::format("no host-visible memory type can import this pointer (memoryTypeBits 0x{:x})",
                                 props.memoryTypeBits));
  b.type_ = *type;
  b.flags_ = c.memory.memoryTypes[*type].propertyFlags;
  VkImportMemoryHostPointerInfoEXT imp{VK_STRUCTURE_TYPE_IMPORT_MEMORY_HOST_POINTER_INFO_EXT};
  imp.handleType = handle;
  imp.pHostPointer = p;
  VkMemoryAllocateInfo ai{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
  ai.pNext = &imp;
  ai.allocationSize = bytes;
  ai.memoryTypeIndex = *type;
  check(a.vkAllocateMemory(b.dev_, &ai, nullptr, &b.mem_), "vkAllocateMemory", fmt::format("importing {} B of host memory", bytes));
  check(a.vkBindBufferMemory(b.dev_, b.buf_, b.mem_, 0), "vkBindBufferMemory", "imported memory");
  return b;  // not mapped: the CPU uses the pointer it imported
}

void buffer::flush() const {
  if (!map_ || (flags_ & HC)) return;
  VkMappedMemoryRange r{VK_STRUCTURE_TYPE_MAPPED_MEMORY_RANGE};
  r.memory = mem_;
  r.size = VK_WHOLE_SIZE;
  check(vk().vkFlushMappedMemoryRanges(dev_, 1, &r), "vkFlushMappedMemoryRanges");
}

void buffer::invalidate() const {
  if (!map_ || (flags_ & HC)) return;
  VkMappedMemoryRange r{VK_STRUCTURE_TYPE_MAPPED_MEMORY_RANGE};
  r.memory = mem_;
  r.size = VK_WHOLE_SIZE;
  check(vk().vkInvalidateMappedMemoryRanges(dev_, 1, &r), "vkInvalidateMappedMemoryRanges");
}

}  // namespace xfer::vulkan
