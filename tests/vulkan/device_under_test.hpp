#pragma once
// The Vulkan device the tests run on, found once per test process:
// "vulkan:llvmpipe" (lavapipe, Mesa's Vulkan on the CPU, as in CI), or the
// backend XFER_VULKAN_TEST_DEVICE names ("vulkan:nvidia" on the GPU machine).
// Tests skip, with the reason, where it is not there.
#include <gtest/gtest.h>
#include <string>

#include "vulkan/vulkan_backend.hpp"

namespace xfer::vulkan::testing {

std::string device_under_test_name();
// The backend, or null with why not.
vulkan_backend* device_under_test(std::string* why = nullptr);

}  // namespace xfer::vulkan::testing

// Declares `b`, the device under test, or skips the test with the reason.
#define REQUIRE_DEVICE(b)                                      \
  std::string why_;                                            \
  auto* b = ::xfer::vulkan::testing::device_under_test(&why_); \
  if (!b) GTEST_SKIP() << why_
