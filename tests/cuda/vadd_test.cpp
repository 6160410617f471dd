// The CUDA vadd application on the GPU, through both APIs: every strategy
// runs verified with exactly the phases that apply to it timed, and bad input
// is skipped with a reason. Behaviour only: no test looks at how long
// anything took.
#include <algorithm>
#include <cstdio>
#include <xfer/app/vadd.hpp>
#include <xfer/core/errors.hpp>

#include "cuda/resources.hpp"
#include "cuda/vadd_app.hpp"
#include "gpu.hpp"

using namespace xfer;
using namespace xfer::cuda;

namespace {

const std::vector<std::string> all_strategies{"pageable",   "pageable-unaligned", "aligned", "huge",   "registered",
                                              "pinned",     "pinned-wc",          "mapped",  "managed", "staged"};

// The phase contract, written out: which phases a strategy times.
bool applies(vadd_phase p, const std::string& s) {
  using enum vadd_phase;
  const bool zero_copy = s == "mapped" || s == "managed";
  if (p == map) return s == "registered" || s == "mapped" || s == "staged";
  if (p == write || p == read) return !zero_copy;
  return true;
}

struct vadd_case {
  std::string backend, strategy;
};

class CudaVadd : public ::testing::TestWithParam<vadd_case> {
 protected:
  void SetUp() override { XFER_REQUIRE_GPU(); }
};

}  // namespace

TEST_P(CudaVadd, RunsVerifiedWithEveryApplicablePhaseTimed) {
  cuda_backend& b = *test::gpu().backend(GetParam().backend);
  const std::string s = GetParam().strategy;
  auto app = make_vadd_app(b, 0);
  ASSERT_NE(app, nullptr);
  // One element, a length no multiple of 4 (the kernel's tail), and enough
  // for many grid strides.
  for (std::size_t n : {std::size_t{1}, std::size_t{4099}, std::size_t{1} << 22}) {
    vadd_times t;
    try {
      t = app->run(s, n);
    } catch (const skip_point& e) {
      // Only where the machine refuses the memory (no huge pages, a device without managed memory).
      const auto strategies = app->strategies();
      const auto k = std::find_if(strategies.begin(), strategies.end(), [&](auto& x) { return x.name == s; });
      ASSERT_NE(k, strategies.end());
      if (!k->available || s == "huge") {
        std::printf("%s skipped on %s: %s\n", s.c_str(), b.name().c_str(), e.what());
        return;
      }
      FAIL() << s << " at " << n << " was skipped: " << e.what();
    }
    EXPECT_TRUE(t.verified) << s << " at " << n;
    for (std::size_t i = 0; i < vadd_phase_count; ++i) {
      const auto p = static_cast<vadd_phase>(i);
      if (applies(p, s))
        EXPECT_GE(t[p], 0) << s << " at " << n << ": phase " << vadd_phase_names[i] << " not timed";
      else
        EXPECT_LT(t[p], 0) << s << " at " << n << ": phase " << vadd_phase_names[i] << " does not apply";
    }
  }
}

INSTANTIATE_TEST_SUITE_P(BothApis, CudaVadd, ::testing::ValuesIn([] {
                           std::vector<vadd_case> v;
                           for (const char* b : {"cuda-rt", "cuda-drv"})
                             for (const auto& s : all_strategies) v.push_back({b, s});
                           return v;
                         }()),
                         [](const auto& info) {
                           std::string n = info.param.backend + "_" + info.param.strategy;
                           for (char& c : n)
                             if (c == '-') c = '_';
                           return n;
                         });

TEST(CudaVaddApp, StrategiesAreTheBackendsHostKinds) {
  XFER_REQUIRE_GPU();
  for (const char* name : {"cuda-rt", "cuda-drv"}) {
    auto app = make_vadd_app(*test::gpu().backend(name), 0);
    const auto s = app->strategies();
    ASSERT_EQ(s.size(), all_strategies.size());
    for (std::size_t i = 0; i < s.size(); ++i) {
      EXPECT_EQ(s[i].name, all_strategies[i]);
      EXPECT_FALSE(s[i].description.empty()) << s[i].name;
    }
  }
}

TEST(CudaVaddApp, OnlyOnDevicesThatExist) {
  XFER_REQUIRE_GPU();
  cuda_backend& b = *test::gpu().backend("cuda-rt");
  EXPECT_THROW(make_vadd_app(b, -1), usage_error);
  EXPECT_THROW(make_vadd_app(b, static_cast<int>(b.devices().size())), usage_error);
}

TEST(CudaVaddApp, BadInputIsSkippedWithAReason) {
  XFER_REQUIRE_GPU();
  for (const char* name : {"cuda-rt", "cuda-drv"}) {
    cuda_backend& b = *test::gpu().backend(name);
    auto app = make_vadd_app(b, 0);
    EXPECT_THROW(app->run("pinned", 0), skip_point);
    EXPECT_THROW(app->run("no-such-strategy", 1024), skip_point);
    // Vectors as large as the whole device: neither the device (three of
    // them) nor, on most machines, the host (four) can hold them.
    const std::size_t n = b.devices()[0].memory_bytes / sizeof(std::uint32_t);
    for (const char* s : {"pinned", "managed"}) {
      try {
        app->run(s, n);
        FAIL() << s << " ran " << n << " elements";
      } catch (const skip_point& e) {
        const std::string what = e.what();
        EXPECT_NE(what.find("memory"), std::string::npos) << what;
        EXPECT_NE(what.find(" B"), std::string::npos) << "no numbers in: " << what;
      }
    }
    // And the device is still usable after the refusals.
    EXPECT_TRUE(app->run("pinned", 4099).verified) << name;
  }
}
