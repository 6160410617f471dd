#pragma once
// Shared by the GPU tests: the CUDA backends and APIs, created once, and the
// skip (with the printed reason) where no device or driver is present.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "cuda/api.hpp"
#include "cuda/cuda_backend.hpp"
#include "cuda/cuda_backends.hpp"

namespace xfer::cuda::test {

struct gpu_state {
  std::vector<backend_entry> entries;  // cuda-rt, cuda-drv
  std::string reason;                  // why not, when there is no usable device
  bool available() const { return reason.empty(); }
  cuda_backend* backend(const std::string& name) {
    for (auto& e : entries)
      if (e.name == name) return static_cast<cuda_backend*>(e.impl.get());
    return nullptr;
  }
};

inline gpu_state& gpu() {
  static gpu_state s = [] {
    gpu_state g;
    g.entries = make_cuda_backends({});
    for (const auto& e : g.entries)
      if (!e.impl) g.reason += e.name + ": " + e.reason + "; ";
    return g;
  }();
  return s;
}

}  // namespace xfer::cuda::test

// Skips the calling test, saying why, where no GPU can be used.
#define XFER_REQUIRE_GPU()                                                                       \
  do {                                                                                           \
    if (!::xfer::cuda::test::gpu().available()) GTEST_SKIP() << "no usable CUDA device: "        \
                                                             << ::xfer::cuda::test::gpu().reason; \
  } while (0)
