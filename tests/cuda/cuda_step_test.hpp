#pragma once
// A staged copier test on the CUDA step of device 0, once per API (runtime,
// driver): the step made in SetUp, the test skipped, saying why, where no
// CUDA device is usable. Instantiate with XFER_CUDA_STEP_TESTS(Suite).
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <xfer/mem/cuda/staged_step.hpp>

namespace xfer::test {

class cuda_step_test : public ::testing::TestWithParam<cuda::allocating_api> {
 protected:
  void SetUp() override {
    try {
      step_ = cuda::make_staged_step(0, GetParam());
    } catch (const std::exception& e) {
      GTEST_SKIP() << "no usable CUDA device: " << e.what();
    }
  }
  std::unique_ptr<mem::device_step> step_;
};

inline std::string api_name(const ::testing::TestParamInfo<cuda::allocating_api>& info) {
  return info.param == cuda::allocating_api::runtime ? "Runtime" : "Driver";
}

}  // namespace xfer::test

#define XFER_CUDA_STEP_TESTS(suite)                                                                         \
  INSTANTIATE_TEST_SUITE_P(Api, suite,                                                                      \
                           ::testing::Values(::xfer::cuda::allocating_api::runtime,                         \
                                             ::xfer::cuda::allocating_api::driver),                         \
                           ::xfer::test::api_name)
