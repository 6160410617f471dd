#pragma once
// Core's per-sample check on a real backend's transfer: a batch that landed
// passes; one byte of any place it wrote, flipped afterwards through the
// transfer's own way of reaching it (core's corrupt_place_for_testing), fails
// the check naming that place. Flipped back, it passes again.
#include <gtest/gtest.h>
#include <string>
#include <xfer/core/backend.hpp>
#include <xfer/core/errors.hpp>
#include <xfer/core/sample_check.hpp>

namespace xfer {

inline void expect_every_corrupted_place_caught(transfer& t) {
  ASSERT_NO_THROW(t.verify());
  const auto places = t.places();
  ASSERT_FALSE(places.empty());
  const std::uint64_t last = t.place_bytes() - 1;
  for (std::size_t k = 0; k < places.size(); ++k) {
    SCOPED_TRACE(places[k].what);
    t.poison_sample();
    (void)t.run(1);
    ASSERT_NO_THROW(t.check_sample());
    ASSERT_TRUE(corrupt_place_for_testing(t, k, last));
    try {
      t.check_sample();
      ADD_FAILURE() << "check_sample() passed a corrupted place";
    } catch (const verification_error& e) {
      EXPECT_NE(std::string(e.what()).find(places[k].what), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("byte " + std::to_string(last)), std::string::npos) << e.what();
    }
    // Flip it back: rw's host place is also its source.
    ASSERT_TRUE(corrupt_place_for_testing(t, k, last));
    EXPECT_NO_THROW(t.check_sample());
  }
  EXPECT_FALSE(corrupt_place_for_testing(t, places.size(), 0));
}

}  // namespace xfer
