#pragma once
// A copy beside compute (issue 53): what a way of copying takes from the work
// running beside it, and what that work takes from the copy. Both sides are
// activities done in steps; a round measures a copy way and a workload each
// alone, both at once for the same time (their rates beside each other), and
// a fixed job of both at once (the joint time: until both are done). The
// joint time is what a program pays, and what a choice between ways beside
// compute compares.
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace xfer::beside {

// One side: a copy way or a workload, done in steps.
class activity {
 public:
  virtual ~activity() = default;
  virtual std::string name() const = 0;
  // What one step does, in the side's unit (bytes for a copy, FLOP or bytes
  // read for a workload).
  virtual double amount_per_step() const = 0;
  // One step, done when it returns. Throws on a fault of the side.
  virtual void step() = 0;
};

// Steps per second of `a` alone, stepping for `seconds` (at least one step).
double rate_alone(activity& a, double seconds);

// Both stepping at once for `seconds`, each on a thread of its own: their
// steps per second while the other runs (each counts the steps it finished
// inside the window, at least one).
std::pair<double, double> rates_beside(activity& copy, activity& work, double seconds);

// A fixed job of both: so many steps of each.
struct job {
  std::uint64_t copy_steps = 1;
  std::uint64_t work_steps = 1;
};
// The job done with both at once, each on a thread of its own: seconds until
// both are done.
double joint_seconds(activity& copy, activity& work, job j);

// One round's readings of a copy way beside a workload (steps per second;
// seconds).
struct round_reading {
  double copy_alone = 0, work_alone = 0;
  double copy_beside = 0, work_beside = 0;
  double joint_s = 0;
};
// `copy` and `work` alone, beside each other and in `j`, in that order.
round_reading measure_round(activity& copy, activity& work, double seconds, job j);

// The median and the range of a side's rounds.
struct spread {
  double median = 0, low = 0, high = 0;
};
spread spread_of(std::vector<double> v);  // throws std::invalid_argument when empty

// A copy way beside a workload over its rounds, in the sides' units per
// second. slowdown: per round, how much longer the workload takes beside the
// copy (work_alone / work_beside - 1; 0.12 = 12% longer). copy_share: per
// round, the copy's rate beside the workload against alone.
struct pair_summary {
  spread copy_alone, copy_beside, work_alone, work_beside;
  spread slowdown, copy_share, joint_s;
  std::size_t rounds = 0;
};
pair_summary summarize(const std::vector<round_reading>& rounds, double copy_amount, double work_amount);

// A way's summary beside one workload.
struct way_summary {
  std::string way;
  pair_summary s;
};

// The claim the study makes when the way fastest alone is not the one that
// finishes both first beside the workload: "beside cpu-compute, staged
// finishes both 12% sooner than memcpy, the fastest alone". Made only where
// the two ways' joint-time ranges do not overlap (a claim a rerun keeps);
// nothing where the fastest alone also finishes first, or the ranges meet.
struct finding {
  std::string workload, fastest_alone, first_beside;
  double sooner = 0;  // 1 - first_beside's joint median / fastest_alone's
  std::string text;
};
std::optional<finding> beside_finding(const std::string& workload, const std::vector<way_summary>& ways);

// A copier's choice beside a workload against the ways measured by
// themselves: its joint time against the best way's. vs_best = its joint
// median / the best's - 1 (0.03: 3% longer; negative: sooner).
struct choice_check {
  std::string workload, copier, chose, best_way;
  double joint_s = 0, best_joint_s = 0, vs_best = 0;
};
// None where `ways` is empty.
std::optional<choice_check> check_choice(const std::string& workload, const way_summary& copier,
                                         const std::string& chose, const std::vector<way_summary>& ways);

}  // namespace xfer::beside
