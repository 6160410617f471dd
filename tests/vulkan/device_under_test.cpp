#include "device_under_test.hpp"

#include <cstdlib>

#include "vulkan/vulkan_backends.hpp"

namespace xfer::vulkan::testing {

std::string device_under_test_name() {
  const char* named = std::getenv("XFER_VULKAN_TEST_DEVICE");
  return named && *named ? named : "vulkan:llvmpipe";
}

vulkan_backend* device_under_test(std::string* why) {
  // Built once per process: every test shares the device. Never destroyed:
  // a device destroyed from a static destructor runs after NVIDIA's driver
  // has torn itself down (every test process crashed at exit on the H100).
  static auto& entries = *new std::vector<backend_entry>(make_vulkan_backends({}));
  const std::string name = device_under_test_name();
  for (auto& e : entries)
    if (e.name == name && e.impl) return static_cast<vulkan_backend*>(e.impl.get());
  if (why) {
    *why = "no " + name + " device here (lavapipe: install mesa-vulkan-drivers; another: set XFER_VULKAN_TEST_DEVICE); found:";
    for (auto& e : entries) *why += " " + e.name + (e.impl ? "" : " (" + e.reason + ")");
  }
  return nullptr;
}

}  // namespace xfer::vulkan::testing
