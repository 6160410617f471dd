// The block copier's choice (issue 38: "never slower than the best single
// way"): the ranking rule on given times, and the calibration's rounds with
// fake ways on a fake clock (the order they run in, how long a probe is,
// which ways stop being probed, when the rounds stop), so no speed of this
// machine decides what the tests see.
#include <gtest/gtest.h>
#include <algorithm>
#include <set>

#include <string>
#include <vector>
#include <xfer/mem/blocks/block_copier.hpp>

namespace xfer::mem {
namespace {

using dir = staged_direction;
constexpr block_way loop = block_way::loop, batch = block_way::batch, kernel = block_way::kernel,
                    pack = block_way::pack;

std::vector<block_way> rank(std::vector<block_way_times> t) { return rank_block_ways(t); }

TEST(BlockRanking, OneSlowOutlierRoundDoesNotLoseTheWayThatIsFastInTheOthers) {
  // kernel: fast in six rounds of seven, one round 9x slower (a preemption);
  // its mean (2.1) is above batch's, its median is not.
  EXPECT_EQ(rank({{batch, {1.2, 1.2, 1.21, 1.2, 1.19, 1.2, 1.2}}, {kernel, {1.0, 1.0, 1.0, 9.0, 1.0, 1.01, 1.0}}}),
            (std::vector<block_way>{kernel, batch}));
}

TEST(BlockRanking, OneLuckyFastRoundDoesNotWinAWayThatIsSlowInTheOthers) {
  // batch's best probe (0.5) beats everything kernel ran: the best-of rule
  // the first calibration used picked it; its median is 2.
  EXPECT_EQ(rank({{batch, {2.0, 2.0, 0.5, 2.0, 2.01, 2.0, 1.99}}, {kernel, {1.5, 1.5, 1.51, 1.5, 1.49, 1.5, 1.5}}}),
            (std::vector<block_way>{kernel, batch}));
}

TEST(BlockRanking, WithinTheSpreadTheWayThatWonMoreRoundsComesFirst) {
  // kernel's median (1.01) is below batch's (1.02), their quartiles overlap,
  // and batch was faster in six of the seven rounds.
  const std::vector<block_way_times> t{{kernel, {1.00, 1.00, 1.00, 1.30, 1.30, 1.30, 1.01}},
                                       {batch, {0.99, 0.99, 0.99, 1.29, 1.29, 1.29, 1.02}}};
  EXPECT_EQ(rank(t), (std::vector<block_way>{batch, kernel}));
  // Beyond the spread the median decides, whatever the rounds: kernel's
  // quartiles all below batch's.
  EXPECT_EQ(rank({{kernel, {1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 5.0}}, {batch, {4.0, 4.0, 4.0, 4.0, 4.0, 4.0, 0.9}}}),
            (std::vector<block_way>{kernel, batch}));
}

TEST(BlockRanking, TiesAreResolvedTheSameWayEveryTime) {
  // The same times in any input order: the way that costs the host less first.
  const std::vector<double> same{1.0, 1.0, 1.0};
  const std::vector<block_way> expect{kernel, batch, pack, loop};
  EXPECT_EQ(rank({{loop, same}, {pack, same}, {batch, same}, {kernel, same}}), expect);
  EXPECT_EQ(rank({{kernel, same}, {batch, same}, {pack, same}, {loop, same}}), expect);
  EXPECT_EQ(rank({{pack, same}, {loop, same}, {kernel, same}, {batch, same}}), expect);
  // Three ways that beat each other in a circle within the spread: still one
  // order, the same whatever the input order.
  const std::vector<block_way_times> circle{
      {loop, {1.0, 2.0, 3.0}}, {batch, {2.0, 3.0, 1.0}}, {pack, {3.0, 1.0, 2.0}}};
  const auto first = rank(circle);
  EXPECT_EQ(first, (std::vector<block_way>{batch, pack, loop}));
  EXPECT_EQ(rank({circle[2], circle[0], circle[1]}), first);
  // A way without times is left out.
  EXPECT_EQ(rank({{loop, {}}, {pack, same}}), std::vector<block_way>{pack});
}

// A way that takes the time its script says per move, on a fake clock, and
// writes its name in the log at each move.
struct fake_clock {
  double now = 0;
};
class fake_way final : public block_mover {
 public:
  fake_way(block_way w, fake_clock& c, std::string& log, std::vector<double> script, double then)
      : way_(w), clock_(c), log_(log), script_(std::move(script)), then_(then) {}
  block_way way() const noexcept override { return way_; }
  std::string refusal(const block_job&, const host_access&) const override { return refuse_; }
  void move(const block_job&, const host_access&) override {
    clock_.now += moves_ < script_.size() ? script_[moves_] : then_;
    ++moves_;
    log_ += std::string(to_string(way_)).substr(0, 1);
  }
  std::size_t moves() const { return moves_; }
  std::string refuse_;

 private:
  block_way way_;
  fake_clock& clock_;
  std::string& log_;
  std::vector<double> script_;
  double then_;
  std::size_t moves_ = 0;
};

class BlockCalibration : public ::testing::Test {
 protected:
  block_calibration_options options() {
    block_calibration_options o;
    o.probe_bytes = 4096 * 16;
    o.min_probe_s = 0;  // one move a probe unless a test says
    o.clock = [this] { return clock_.now; };
    return o;
  }
  std::vector<block_way> calibrate(std::vector<fake_way*> ways, const block_calibration_options& o) {
    std::vector<block_mover*> movers(ways.begin(), ways.end());
    return calibrate_block_ways(step_, {dir::to_device, host_block_kind::pinned, 4096}, movers, o);
  }
  host_block_step step_;
  fake_clock clock_;
  std::string log_;
};

TEST_F(BlockCalibration, RoundsInterleaveTheWaysInAnOrderShuffledEachRound) {
  fake_way l(loop, clock_, log_, {}, 1.0), b(batch, clock_, log_, {}, 1.0), k(kernel, clock_, log_, {}, 1.0);
  auto o = options();
  o.rounds = o.min_rounds = 12;
  o.budget_s = 1e9;
  calibrate({&l, &b, &k}, o);
  // Each way's warm-up and first move, then 12 rounds of each way once.
  ASSERT_EQ(log_.size(), 6u + 12u * 3u) << log_;
  EXPECT_EQ(log_.substr(0, 6), "llbbkk");
  std::set<std::string> orders;
  for (std::size_t r = 0; r < 12; ++r) {
    std::string round = log_.substr(6 + 3 * r, 3);
    orders.insert(round);
    std::sort(round.begin(), round.end());
    EXPECT_EQ(round, "bkl") << "round " << r << " of " << log_;
  }
  // Not one order kept or rotated: each way ran right after each other way
  // (a rotation keeps l after k, b after l and k after b: 3 of the 6 pairs).
  std::set<std::pair<char, char>> followed;  // (before, after), rounds' ends included
  for (std::size_t i = 7; i < log_.size(); ++i)
    if (log_[i - 1] != log_[i]) followed.insert({log_[i - 1], log_[i]});
  EXPECT_GT(orders.size(), 3u) << log_;
  EXPECT_EQ(followed.size(), 6u) << log_;
}

TEST_F(BlockCalibration, AWayFastInMostRoundsIsChosenOverOneWithALuckyProbe) {
  // Rounds (after the warm-up and first move): kernel 1.0 but round 3 9.0;
  // batch 1.2 but round 2 0.5 (its best beats kernel's best).
  fake_way k(kernel, clock_, log_, {1, 1, 1, 1, 1, 9, 1, 1, 1}, 1.0);
  fake_way b(batch, clock_, log_, {1.2, 1.2, 1.2, 1.2, 0.5, 1.2, 1.2, 1.2, 1.2}, 1.2);
  auto o = options();
  o.budget_s = 1e9;
  EXPECT_EQ(calibrate({&b, &k}, o), (std::vector<block_way>{kernel, batch}));
  EXPECT_EQ(k.moves(), 2u + 7u);  // every round ran: neither is hopeless
}

TEST_F(BlockCalibration, AProbeRepeatsTheMoveUntilItLastsTheMinimum) {
  // kernel moves in 30 us, pack in 1 ms: 100 us probes are 4 kernel moves
  // and one pack move.
  fake_way k(kernel, clock_, log_, {}, 30e-6), p(pack, clock_, log_, {}, 1e-3);
  auto o = options();
  o.min_probe_s = 100e-6;
  o.rounds = o.min_rounds = 3;
  o.hopeless = 1e9;
  calibrate({&k, &p}, o);
  EXPECT_EQ(k.moves(), 2u + 3u * 4u);
  EXPECT_EQ(p.moves(), 2u + 3u);
}

TEST_F(BlockCalibration, AHopelessWayStopsBeingProbedAndTheBudgetEndsTheRounds) {
  // loop is 40x slower than kernel: after min_rounds it is not probed again,
  // but still ranked (last).
  fake_way k(kernel, clock_, log_, {}, 1e-3), b(batch, clock_, log_, {}, 1.1e-3), l(loop, clock_, log_, {}, 40e-3);
  auto o = options();
  o.rounds = 7;
  o.min_rounds = 3;
  o.budget_s = 1e9;
  EXPECT_EQ(calibrate({&l, &b, &k}, o), (std::vector<block_way>{kernel, batch, loop}));
  EXPECT_EQ(l.moves(), 2u + 3u);
  EXPECT_EQ(k.moves(), 2u + 7u);
  // With a budget of 5 ms the rounds stop once min_rounds are done and the
  // budget is spent (each round: 2.1 ms).
  log_.clear();
  fake_way k2(kernel, clock_, log_, {}, 1e-3), b2(batch, clock_, log_, {}, 1.1e-3);
  o.budget_s = 5e-3;
  calibrate({&k2, &b2}, o);
  EXPECT_EQ(k2.moves(), 2u + 3u);
}

TEST_F(BlockCalibration, RefusedWaysAreLeftOutAndOneWayIsNotProbed) {
  fake_way k(kernel, clock_, log_, {}, 1e-3), p(pack, clock_, log_, {}, 2e-3);
  k.refuse_ = "pageable";
  EXPECT_EQ(calibrate({&k, &p}, options()), std::vector<block_way>{pack});
  EXPECT_EQ(k.moves() + p.moves(), 0u);
}

}  // namespace
}  // namespace xfer::mem
