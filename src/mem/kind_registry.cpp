#include <xfer/mem/kind_registry.hpp>

namespace xfer::mem {
namespace {

// Properties a kind's resources declare (their `declared` members).
constexpr properties host_only{};
constexpr properties pinned_block{.host_accessible = true, .device_accessible = false, .pinned = true};
constexpr properties pinned_wc{.host_accessible = true, .device_accessible = false, .pinned = true, .write_combined = true};
constexpr properties pinned_mapped{.host_accessible = true, .device_accessible = true, .pinned = true};
constexpr properties migrating{.host_accessible = true, .device_accessible = true, .pinned = false};

constexpr kind_roles swept{};
constexpr kind_traits direct{.dma_direct = true};
constexpr kind_traits api_pinned{.dma_direct = true, .api_pinned = true};
constexpr kind_roles alloc_only{.sweep = false, .alloc = true, .alloc_default = true};

}  // namespace

const std::vector<kind_entry>& host_kinds() {
  using enum kind_maker;
  // In report order: the sweep, the studies and the Python package list kinds as here.
  static const std::vector<kind_entry> kinds{
      {"pageable", "malloc: what an ordinary program hands to a copy API", plain, host_only,
       {.overview = true, .alloc = true, .alloc_default = true, .cpu_default = true, .host_block = true},
       {.program_default = true}},
      {"pageable-unaligned", "malloc, then an offset past a page boundary (on no page or cache-line boundary)", plain,
       host_only, {.overview = true, .alloc = true, .host_block = true}, {.offset_of = "pageable"}},
      {"aligned", "posix_memalign at a page", plain, host_only,
       {.alloc = true, .alloc_default = true, .cpu_default = true, .host_block = true}},
      {"over-aligned", "malloc with room to align inside, the base pointer kept in front (the allocator study's)",
       plain, host_only, alloc_only},
      {"mmap", "anonymous mmap: whole pages, returned to the OS on free", plain, host_only, alloc_only},
      {"huge", "mmap at a 2 MiB boundary + madvise(MADV_HUGEPAGE)", plain, host_only,
       {.alloc = true, .alloc_default = true, .cpu_default = true, .host_block = true}},
      {"numa", "mmap + mbind(MPOL_BIND) to a NUMA node", plain, host_only, alloc_only},
      {"registered", "page-aligned memory registered in place (cudaHostRegister)", cuda, pinned_block,
       {.alloc = true, .alloc_default = true, .host_block = true}, direct},
      {"pinned", "cudaHostAlloc: page-locked", cuda, pinned_block,
       {.alloc = true, .alloc_default = true, .cpu_default = true, .host_block = true}, api_pinned},
      {"pinned-wc", "cudaHostAlloc(WriteCombined): page-locked, fast CPU writes, very slow CPU reads", cuda, pinned_wc,
       {.alloc = true, .cpu_default = true, .host_block = true}, direct},
      {"mapped", "cudaHostAlloc(Mapped): page-locked, the device addresses it (zero copy)", cuda, pinned_mapped,
       {.alloc = true, .host_block = true}, direct},
      {"managed", "cudaMallocManaged, kept on the host: migrates to the device that touches it", cuda, migrating,
       swept},
      {"pinned-fast", "huge pages faulted in by several threads, then registered whole (pins a large buffer fast)",
       cuda, pinned_block, {.sweep = false, .alloc = true, .alloc_default = true, .host_block = true}, direct},
      {"alloc-host-ptr", "clCreateBuffer(CL_MEM_ALLOC_HOST_PTR), mapped once: the driver's pinned memory", opencl,
       std::nullopt, {.alloc = true}, api_pinned},
      {"use-host-ptr", "clCreateBuffer(CL_MEM_USE_HOST_PTR) over aligned memory, mapped for host access", opencl,
       std::nullopt, swept, direct},
      {"svm-coarse", "clSVMAlloc, coarse-grained", opencl, std::nullopt, swept},
      {"svm-fine", "clSVMAlloc, fine-grained: shared by host and device without mapping", opencl, std::nullopt, swept},
      {"host-coherent", "host memory the device reads over the link, HOST_VISIBLE|HOST_COHERENT", vulkan,
       std::nullopt, swept, direct},
      {"host-cached", "host memory the device reads over the link, HOST_VISIBLE|HOST_CACHED", vulkan, std::nullopt,
       swept, direct},
      {"device-local-host-visible", "device memory the CPU maps (the BAR on a discrete GPU)", vulkan, std::nullopt,
       swept, {.device_memory = true}},
      {"imported", "pageable memory imported with VK_EXT_external_memory_host", vulkan, std::nullopt, swept},
      // The XRT backend lists these summaries as the kinds' descriptions.
      {"bo-normal",
       "xrt::bo::flags::normal: XRT allocates host backing and device memory; bo.sync moves between them", xrt,
       std::nullopt, swept},
      {"bo-host-only",
       "xrt::bo::flags::host_only: host memory the device reaches over the link; bo.sync has no copy to make", xrt,
       std::nullopt, swept},
      // The CPU study asks for it and says why no layer makes it (Linux gives a
      // user program no uncached mapping of ordinary RAM).
      {"uncached", "memory the CPU neither caches nor combines writes to", none, std::nullopt,
       {.sweep = false, .cpu_default = true}},
  };
  return kinds;
}

const char* to_string(kind_maker m) {
  switch (m) {
    case kind_maker::plain: return "plain";
    case kind_maker::cuda: return "cuda";
    case kind_maker::opencl: return "opencl";
    case kind_maker::vulkan: return "vulkan";
    case kind_maker::xrt: return "xrt";
    case kind_maker::none: return "none";
  }
  return "?";
}

const kind_entry* find_host_kind(std::string_view name) {
  for (const auto& k : host_kinds())
    if (k.name == name) return &k;
  return nullptr;
}

std::vector<std::string> kind_names_of(kind_maker maker, bool sweep_only) {
  std::vector<std::string> out;
  for (const auto& k : host_kinds())
    if (k.maker == maker && (k.roles.sweep || !sweep_only)) out.emplace_back(k.name);
  return out;
}

}  // namespace xfer::mem
