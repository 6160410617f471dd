// The OpenCL tests' main: PoCL needs a writable kernel cache before the first
// OpenCL call; CTest sets POCL_CACHE_DIR, and a run by hand gets a temp dir.
// Route staged's copier gets a tuning fixed by the inputs (so nothing is
// calibrated): 4 KiB chunks and no handoff, so the conformance suite's
// small sizes run through the ring and end in partial chunks.
#include <cstdlib>
#include <filesystem>
#include <gtest/gtest.h>
#include <unistd.h>

#include "../support/scoped_inputs.hpp"

int main(int argc, char** argv) {
  if (!std::getenv("POCL_CACHE_DIR")) {
    const auto dir = std::filesystem::temp_directory_path() / ("xfer-pocl-cache-" + std::to_string(::getuid()));
    std::filesystem::create_directories(dir);
    ::setenv("POCL_CACHE_DIR", dir.c_str(), 0);
  }
  const auto fixed = xfer::test::fixed_staged_tuning("4096", "4", "2", "1");
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
