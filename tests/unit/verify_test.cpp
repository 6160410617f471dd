// Core's verification (src/core/verify.cpp) on a fake transfer whose places
// are plain vectors: healthy places pass, a place corrupted after the sample,
// or never written, fails with the place and the first bad byte named.
#include <gtest/gtest.h>
#include <map>
#include <vector>
#include <xfer/core/backend.hpp>
#include <xfer/core/errors.hpp>
#include <xfer/core/pattern.hpp>
#include <xfer/core/sample_check.hpp>

using namespace xfer;

namespace {

class vector_transfer final : public transfer {
 public:
  vector_transfer(direction d, std::size_t n) : dir_(d), n_(n) {
    for (auto* b : {&host_[0], &host_[1], &dev_[0], &dev_[1]}) b->assign(n, std::byte{0});
    fill_pattern(host_[0].data(), n, seed_h2d);
    fill_pattern(dev_[d == direction::bidir ? 1 : 0].data(), n, seed_d2h);
  }
  sample run(std::size_t reps) override {
    for (std::size_t r = 0; r < reps; ++r) {
      switch (dir_) {
        case direction::h2d: dev_[0] = host_[0]; break;
        case direction::d2h: host_[0] = dev_[0]; break;
        case direction::rw:
          run_step(0);
          run_step(1);
          break;
        case direction::bidir:
          dev_[0] = host_[0];
          host_[1] = dev_[1];
          break;
        case direction::d2d: dev_[1] = dev_[0]; break;
      }
    }
    if (corrupt_at) (*corrupt_at.place)[corrupt_at.offset] ^= std::byte{0x10};
    return {1e-3, 1e-3, {}, {}};
  }
  void run_step(std::size_t k) override {
    ++steps[k];
    if (k == 0) dev_[0] = host_[0];
    if (k == 1 && !skip_read_back) host_[0] = dev_[0];
  }
  std::span<const sample_destination> places() const override { return sample_destinations(dir_); }
  std::uint64_t place_bytes() const override { return n_; }
  void reach_place(const sample_destination& d, place_access a,
                   const std::function<void(std::span<std::byte>)>& use) override {
    ++reached[a];
    use((d.on_device ? dev_ : host_)[d.buffer]);
  }
  first_use setup_costs() const override { return {}; }
  clock_kind timer_kind() const override { return clock_kind::wall; }
  double timer_resolution_s() const override { return 1e-9; }
  std::uint64_t bytes_per_rep() const override { return n_; }

  // What run() breaks after the repetitions: a byte of one buffer.
  struct corruption {
    std::vector<std::byte>* place = nullptr;
    std::size_t offset = 0;
    explicit operator bool() const { return place != nullptr; }
  } corrupt_at;
  bool skip_read_back = false;
  std::map<std::size_t, int> steps;
  std::map<place_access, int> reached;
  std::vector<std::byte>& dev(int i) { return dev_[i]; }
  std::vector<std::byte>& host(int i) { return host_[i]; }

 private:
  direction dir_;
  std::size_t n_;
  std::vector<std::byte> host_[2], dev_[2];
};

std::string failure_of(transfer& t) {
  try {
    t.check_sample();
  } catch (const verification_error& e) {
    return e.what();
  }
  return {};
}

const direction every_direction[] = {direction::h2d, direction::d2h, direction::rw, direction::bidir, direction::d2d};

}  // namespace

TEST(CoreVerify, RightPlacesPassInEveryDirection) {
  for (direction d : every_direction) {
    vector_transfer t(d, 1000);
    EXPECT_NO_THROW(t.verify()) << to_string(d);
    for (int i = 0; i < 3; ++i) {
      t.poison_sample();
      (void)t.run(2);
      EXPECT_EQ(failure_of(t), "") << to_string(d);
    }
  }
}

TEST(CoreVerify, APlaceCorruptedAfterTheSampleFailsNamingPlaceAndByte) {
  vector_transfer t(direction::h2d, 1000);
  t.corrupt_at = {&t.dev(0), 777};
  t.poison_sample();
  (void)t.run(1);
  EXPECT_EQ(failure_of(t).rfind("h2d destination (device buffer): byte 777 of 1000 differs from what was sent (got 0x", 0),
            0u)
      << failure_of(t);
  // verify() runs the same check.
  EXPECT_THROW(t.verify(), verification_error);
}

// Every place of every direction is checked, not only the first.
TEST(CoreVerify, EachPlaceOfEachDirectionIsChecked) {
  for (direction d : every_direction) {
    const auto ps = sample_destinations(d);
    for (std::size_t k = 0; k < ps.size(); ++k) {
      vector_transfer t(d, 64);
      t.corrupt_at = {&(ps[k].on_device ? t.dev(ps[k].buffer) : t.host(ps[k].buffer)), 63};
      t.poison_sample();
      (void)t.run(1);
      const std::string why = failure_of(t);
      EXPECT_NE(why.find(ps[k].what), std::string::npos) << to_string(d) << " place " << k << ": " << why;
      EXPECT_NE(why.find("byte 63 of 64"), std::string::npos) << why;
    }
  }
}

TEST(CoreVerify, ASampleThatNeverRanLeavesThePoisonAndFails) {
  for (direction d : every_direction) {
    vector_transfer t(d, 100);
    t.poison_sample();
    EXPECT_NE(failure_of(t), "") << to_string(d);
  }
}

TEST(CoreVerify, TheSamePlacesThroughTheTestingHook) {
  vector_transfer t(direction::bidir, 100);
  t.poison_sample();
  (void)t.run(1);
  ASSERT_TRUE(corrupt_place_for_testing(t, 1, 5));
  EXPECT_NE(failure_of(t).find("bidir d2h destination (host memory): byte 5 of 100"), std::string::npos);
  EXPECT_FALSE(corrupt_place_for_testing(t, 2, 0)) << "bidir has two places";
  EXPECT_GE(t.reached[place_access::update], 1);
}

// rw reads back into its own source: verify runs it step by step, so a
// read-back that never runs (the source's pattern still there) is caught.
TEST(CoreVerify, RwVerifiesStepByStepAndCatchesAMissingReadBack) {
  vector_transfer ok(direction::rw, 256);
  EXPECT_NO_THROW(ok.verify());
  EXPECT_EQ(ok.steps[0], 1);
  EXPECT_EQ(ok.steps[1], 1);

  vector_transfer lost(direction::rw, 256);
  lost.skip_read_back = true;
  try {
    lost.verify();
    ADD_FAILURE() << "a read-back that never ran passed";
  } catch (const verification_error& e) {
    EXPECT_NE(std::string(e.what()).find("rw read-back destination (host memory): byte 0 of 256"), std::string::npos)
        << e.what();
  }
}

// A transfer that neither names places nor overrides the checks is a
// programming error, said as one, never a silent pass.
TEST(CoreVerify, ATransferWithoutPlacesCannotPass) {
  struct bare final : transfer {
    sample run(std::size_t) override { return {}; }
    first_use setup_costs() const override { return {}; }
    clock_kind timer_kind() const override { return clock_kind::wall; }
    double timer_resolution_s() const override { return 1; }
    std::uint64_t bytes_per_rep() const override { return 1; }
  } t;
  EXPECT_THROW(t.verify(), std::logic_error);
  EXPECT_THROW(t.poison_sample(), std::logic_error);
  EXPECT_THROW(t.check_sample(), std::logic_error);
}
