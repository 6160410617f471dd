#pragma once
// The PoCL platform the tests run on, found once per test process. Tests skip
// (with the reason) where PoCL is not installed.
#include <gtest/gtest.h>
#include <memory>
#include <string>

#include "opencl/opencl_backend.hpp"

namespace xfer::opencl::testing {

// The "opencl:pocl" backend, or null with why not.
opencl_backend* pocl_backend(std::string* why = nullptr);

#define XFER_REQUIRE_POCL(b)                                 \
  std::string pocl_why_;                                     \
  auto* b = ::xfer::opencl::testing::pocl_backend(&pocl_why_); \
  if (!b) GTEST_SKIP() << pocl_why_

}  // namespace xfer::opencl::testing
