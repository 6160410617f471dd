#include "loader.hpp"

#include <dlfcn.h>
#include <fmt/format.h>
#include <mutex>

namespace xfer::vulkan {
namespace {

api table;

}  // namespace

const char* result_name(VkResult rc) {
  switch (rc) {
    case VK_SUCCESS: return "VK_SUCCESS";
    case VK_NOT_READY: return "VK_NOT_READY";
    case VK_TIMEOUT: return "VK_TIMEOUT";
    case VK_INCOMPLETE: return "VK_INCOMPLETE";
    case VK_ERROR_OUT_OF_HOST_MEMORY: return "VK_ERROR_OUT_OF_HOST_MEMORY";
    case VK_ERROR_OUT_OF_DEVICE_MEMORY: return "VK_ERROR_OUT_OF_DEVICE_MEMORY";
    case VK_ERROR_INITIALIZATION_FAILED: return "VK_ERROR_INITIALIZATION_FAILED";
    case VK_ERROR_DEVICE_LOST: return "VK_ERROR_DEVICE_LOST";
    case VK_ERROR_MEMORY_MAP_FAILED: return "VK_ERROR_MEMORY_MAP_FAILED";
    case VK_ERROR_LAYER_NOT_PRESENT: return "VK_ERROR_LAYER_NOT_PRESENT";
    case VK_ERROR_EXTENSION_NOT_PRESENT: return "VK_ERROR_EXTENSION_NOT_PRESENT";
    case VK_ERROR_FEATURE_NOT_PRESENT: return "VK_ERROR_FEATURE_NOT_PRESENT";
    case VK_ERROR_INCOMPATIBLE_DRIVER: return "VK_ERROR_INCOMPATIBLE_DRIVER";
    case VK_ERROR_TOO_MANY_OBJECTS: return "VK_ERROR_TOO_MANY_OBJECTS";
    case VK_ERROR_FORMAT_NOT_SUPPORTED: return "VK_ERROR_FORMAT_NOT_SUPPORTED";
    case VK_ERROR_INVALID_EXTERNAL_HANDLE: return "VK_ERROR_INVALID_EXTERNAL_HANDLE";
    case VK_ERROR_OUT_OF_POOL_MEMORY: return "VK_ERROR_OUT_OF_POOL_MEMORY";
    default: return "VkResult";
  }
}

bool is_out_of_memory(VkResult rc) {
  return rc == VK_ERROR_OUT_OF_DEVICE_MEMORY || rc == VK_ERROR_OUT_OF_HOST_MEMORY || rc == VK_ERROR_TOO_MANY_OBJECTS;
}

vk_error::vk_error(VkResult rc, std::string_view call, std::string_view detail)
    : std::runtime_error(detail.empty() ? fmt::format("{} failed: {} ({})", call, result_name(rc), static_cast<int>(rc))
                                        : fmt::format("{} failed ({}): {} ({})", call, detail, result_name(rc),
                                                      static_cast<int>(rc))),
      rc_(rc) {}

api& open_loader() {
  static std::once_flag once;
  static std::string error;
  std::call_once(once, [] {
    // The SONAME the loader package installs (libvulkan1); libvulkan.so is
    // only there with the development package.
    void* lib = dlopen("libvulkan.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      const char* why = dlerror();
      error = fmt::format("the Vulkan loader libvulkan.so.1 could not be opened ({}); install libvulkan1", why ? why : "?");
      return;
    }
    table.vkGetInstanceProcAddr = reinterpret_cast<PFN_vkGetInstanceProcAddr>(dlsym(lib, "vkGetInstanceProcAddr"));
    if (!table.vkGetInstanceProcAddr) {
      error = "libvulkan.so.1 has no vkGetInstanceProcAddr";
      return;
    }
#define XFER_VK_LOAD(name) table.name = reinterpret_cast<PFN_##name>(table.vkGetInstanceProcAddr(nullptr, #name));
    XFER_VK_GLOBAL_FNS(XFER_VK_LOAD)
#undef XFER_VK_LOAD
    if (!table.vkCreateInstance) error = "the Vulkan loader gives no vkCreateInstance";
  });
  if (!error.empty()) throw std::runtime_error(error);
  return table;
}

const api& vk() { return table; }

void load_instance(VkInstance instance) {
#define XFER_VK_LOAD(name)                                                                              \
  table.name = reinterpret_cast<PFN_##name>(table.vkGetInstanceProcAddr(instance, #name));              \
  if (!table.name) throw std::runtime_error("the Vulkan loader gives no " #name " (Vulkan 1.1 or later needed)");
  XFER_VK_INSTANCE_FNS(XFER_VK_LOAD)
#undef XFER_VK_LOAD
  table.vkGetMemoryHostPointerPropertiesEXT = reinterpret_cast<PFN_vkGetMemoryHostPointerPropertiesEXT>(
      table.vkGetInstanceProcAddr(instance, "vkGetMemoryHostPointerPropertiesEXT"));
}

}  // namespace xfer::vulkan
