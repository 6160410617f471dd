#include "instance.hpp"

#include <algorithm>
#include <cctype>
#include <fmt/format.h>
#include <map>
#include <mutex>

namespace xfer::vulkan {

instance::~instance() {
  if (h_) vk().vkDestroyInstance(h_, nullptr);
}

std::shared_ptr<instance> shared_instance() {
  static std::mutex m;
  // Never destroyed: a static destructor would call vkDestroyInstance after
  // NVIDIA's driver has run its own exit handlers, and every process crashed
  // at exit on a GPU machine (the driver frees what is left when the process ends).
  static auto& inst = *new std::shared_ptr<instance>();
  std::lock_guard lock(m);
  if (inst) return inst;
  api& a = open_loader();
  std::uint32_t loader_version = VK_API_VERSION_1_0;
  if (a.vkEnumerateInstanceVersion) a.vkEnumerateInstanceVersion(&loader_version);
  if (loader_version < VK_API_VERSION_1_2)
    throw std::runtime_error(fmt::format("the Vulkan loader is version {}; the backend needs 1.2 (timeline semaphores)",
                                         version_text(loader_version)));
  VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO};
  app.pApplicationName = "xferbench";
  app.apiVersion = std::min<std::uint32_t>(loader_version, VK_API_VERSION_1_3);
  VkInstanceCreateInfo info{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
  info.pApplicationInfo = &app;
  VkInstance h = VK_NULL_HANDLE;
  const VkResult rc = a.vkCreateInstance(&info, nullptr, &h);
  if (rc == VK_ERROR_INCOMPATIBLE_DRIVER)
    throw std::runtime_error(
        "no Vulkan driver was found (vkCreateInstance: VK_ERROR_INCOMPATIBLE_DRIVER); install one (mesa-vulkan-drivers "
        "for lavapipe) or name its ICD file in VK_DRIVER_FILES");
  check(rc, "vkCreateInstance");
  auto made = std::make_shared<instance>(h);
  made->version_ = app.apiVersion;
  load_instance(h);
  inst = made;
  return inst;
}

std::string version_text(std::uint32_t v) {
  return fmt::format("{}.{}.{}", VK_API_VERSION_MAJOR(v), VK_API_VERSION_MINOR(v), VK_API_VERSION_PATCH(v));
}

std::uint64_t device_caps::device_local_bytes() const {
  std::uint64_t most = 0;
  for (std::uint32_t i = 0; i < memory.memoryHeapCount; ++i)
    if (memory.memoryHeaps[i].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT) most = std::max(most, memory.memoryHeaps[i].size);
  return most;
}

namespace {

std::string type_name(VkPhysicalDeviceType t) {
  switch (t) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return "gpu";
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return "integrated-gpu";
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: return "virtual-gpu";
    case VK_PHYSICAL_DEVICE_TYPE_CPU: return "cpu";
    default: return "other";
  }
}

// NVIDIA packs its driver version 10.8.8.6 bits; everyone else uses Vulkan's.
std::string driver_version_text(std::uint32_t vendor, std::uint32_t v) {
  if (vendor == 0x10de) return fmt::format("{}.{}.{}", v >> 22, (v >> 14) & 0xff, (v >> 6) & 0xff);
  return version_text(v);
}

bool has_extension(VkPhysicalDevice d, const char* name) {
  std::uint32_t n = 0;
  vk().vkEnumerateDeviceExtensionProperties(d, nullptr, &n, nullptr);
  std::vector<VkExtensionProperties> exts(n);
  vk().vkEnumerateDeviceExtensionProperties(d, nullptr, &n, exts.data());
  return std::any_of(exts.begin(), exts.end(), [&](const VkExtensionProperties& e) { return std::string_view(e.extensionName) == name; });
}

device_caps query(VkPhysicalDevice d, std::uint32_t index) {
  const api& a = vk();
  device_caps c;
  c.handle = d;
  c.index = index;
  VkPhysicalDeviceProperties base{};
  a.vkGetPhysicalDeviceProperties(d, &base);
  c.api_version = base.apiVersion;
  c.host_import = has_extension(d, VK_EXT_EXTERNAL_MEMORY_HOST_EXTENSION_NAME);
  const bool pci = has_extension(d, VK_EXT_PCI_BUS_INFO_EXTENSION_NAME);

  VkPhysicalDeviceDriverProperties driver{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES};
  VkPhysicalDeviceExternalMemoryHostPropertiesEXT import{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_EXTERNAL_MEMORY_HOST_PROPERTIES_EXT};
  VkPhysicalDevicePCIBusInfoPropertiesEXT bus{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PCI_BUS_INFO_PROPERTIES_EXT};
  VkPhysicalDeviceMaintenance3Properties m3{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_3_PROPERTIES};
  VkPhysicalDeviceProperties2 props{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
  // Chain only what the device has: an unknown structure in the chain is invalid.
  void** next = &props.pNext;
  auto link = [&](auto& s) {
    *next = &s;
    next = &s.pNext;
  };
  link(m3);
  if (c.api_version >= VK_API_VERSION_1_2) link(driver);
  if (c.host_import) link(import);
  if (pci) link(bus);
  a.vkGetPhysicalDeviceProperties2(d, &props);

  c.name = base.deviceName;
  c.vendor_id = base.vendorID;
  c.type = type_name(base.deviceType);
  c.driver_version = driver_version_text(base.vendorID, base.driverVersion);
  c.driver_name = c.api_version >= VK_API_VERSION_1_2 ? driver.driverName : "";
  c.driver_info = c.api_version >= VK_API_VERSION_1_2 ? driver.driverInfo : "";
  c.timestamp_period_ns = base.limits.timestampPeriod;
  c.max_alloc_bytes = m3.maxMemoryAllocationSize;
  c.max_storage_range = base.limits.maxStorageBufferRange;
  c.max_group_count_x = base.limits.maxComputeWorkGroupCount[0];
  c.non_coherent_atom = std::max<std::uint64_t>(1, base.limits.nonCoherentAtomSize);
  c.min_map_alignment = std::max<std::uint64_t>(64, base.limits.minMemoryMapAlignment);
  c.import_alignment = c.host_import ? import.minImportedHostPointerAlignment : 0;
  if (pci)
    c.pci_bus_id = fmt::format("{:04x}:{:02x}:{:02x}.{:x}", bus.pciDomain, bus.pciBus, bus.pciDevice, bus.pciFunction);

  a.vkGetPhysicalDeviceMemoryProperties(d, &c.memory);

  std::uint32_t n = 0;
  a.vkGetPhysicalDeviceQueueFamilyProperties(d, &n, nullptr);
  std::vector<VkQueueFamilyProperties> fams(n);
  a.vkGetPhysicalDeviceQueueFamilyProperties(d, &n, fams.data());
  for (std::uint32_t i = 0; i < n; ++i)
    c.families.push_back({i, fams[i].queueFlags, fams[i].queueCount, fams[i].timestampValidBits});

  if (c.api_version >= VK_API_VERSION_1_2) {
    VkPhysicalDeviceTimelineSemaphoreFeatures timeline{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_TIMELINE_SEMAPHORE_FEATURES};
    VkPhysicalDeviceHostQueryResetFeatures reset{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_HOST_QUERY_RESET_FEATURES};
    timeline.pNext = &reset;
    VkPhysicalDeviceFeatures2 features{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
    features.pNext = &timeline;
    a.vkGetPhysicalDeviceFeatures2(d, &features);
    c.timeline_semaphores = timeline.timelineSemaphore == VK_TRUE;
    c.host_query_reset = reset.hostQueryReset == VK_TRUE;
  }
  return c;
}

}  // namespace

std::vector<device_caps> discover_devices(const instance& inst) {
  std::uint32_t n = 0;
  check(vk().vkEnumeratePhysicalDevices(inst.get(), &n, nullptr), "vkEnumeratePhysicalDevices");
  std::vector<VkPhysicalDevice> handles(n);
  check(vk().vkEnumeratePhysicalDevices(inst.get(), &n, handles.data()), "vkEnumeratePhysicalDevices");
  std::vector<device_caps> out;
  for (std::uint32_t i = 0; i < n; ++i) out.push_back(query(handles[i], i));
  return out;
}

std::vector<std::string> device_tokens(const std::vector<device_caps>& devices) {
  std::vector<std::string> tokens;
  std::map<std::string, int> count;
  for (const auto& d : devices) {
    std::string t;
    for (char ch : d.driver_name.empty() ? d.name : d.driver_name) {
      if (std::isalnum(static_cast<unsigned char>(ch)))
        t += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
      else if (!t.empty() && t.back() != '-')
        t += '-';
    }
    while (!t.empty() && t.back() == '-') t.pop_back();
    // "NVIDIA" is the driver's name; "llvmpipe" lavapipe's.
    if (t.empty()) t = "device";
    tokens.push_back(t);
    ++count[t];
  }
  std::map<std::string, int> seen;
  for (std::size_t i = 0; i < tokens.size(); ++i)
    if (count[tokens[i]] > 1 && seen[tokens[i]]++ > 0) tokens[i] = fmt::format("{}-{}", tokens[i], i);
  return tokens;
}

}  // namespace xfer::vulkan
