// `xferbench beside`: each way of copying beside a workload, both sides
// measured (xfer/beside/study.hpp). Options and wiring only.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <memory>
#include <xfer/beside/copy_ways.hpp>
#include <xfer/beside/cpu_workloads.hpp>
#include <xfer/beside/study.hpp>
#include <xfer/core/describe.hpp>
#include <xfer/core/session.hpp>
#include <xfer/core/size.hpp>
#include <xfer/core/system_probe.hpp>
#include <xfer/config.hpp>
#if XFER_HAVE_CUDA
#include <xfer/beside/cuda_sides.hpp>
#endif

#include "commands.hpp"
#include "options.hpp"

namespace xfer::cli {

struct beside_args {
  beside::options study;
  std::string backend;  // host | cuda-rt; empty: cuda-rt where a device can be used, else host
  int device = 0;
  std::string block_size = "16K", work_size = "256M";
  std::string json;
  bool quiet = false;
  double watchdog = -1;
};

static int run_beside(beside_args a, const std::vector<std::string>& argv) {
  a.study.block_bytes = parse_size(a.block_size);
  a.study.work_bytes = parse_size(a.work_size);
  if (!a.backend.empty() && a.backend != "host" && a.backend != "cuda-rt")
    throw usage_error(fmt::format("-b {}: expected host or cuda-rt", a.backend));
  // Bad input is refused before a device is opened: the workloads of every
  // backend this build has here, the backend's own once its sides are made.
  std::vector<std::string> known = beside::cpu_workload_names();
#if XFER_HAVE_CUDA
  for (const auto& n : beside::gpu_workload_names()) known.push_back(n);
#endif
  a.study.check(known);
  beside::sides sides;
  if (a.backend != "host") {
#if XFER_HAVE_CUDA
    try {
      sides = beside::cuda_sides(a.device);
    } catch (const std::exception& e) {
      if (a.backend == "cuda-rt") throw std::runtime_error(fmt::format("-b cuda-rt: {}", e.what()));
      fmt::print(stderr, "xferbench: note: no CUDA device to use ({}): the host's half only\n", e.what());
    }
#else
    if (a.backend == "cuda-rt") throw std::runtime_error("-b cuda-rt: this xferbench was built without CUDA");
    fmt::print(stderr, "xferbench: note: this xferbench was built without CUDA: the host's half only\n");
#endif
  }
  if (!sides.contiguous) sides = beside::host_sides();
  beside::beside_study study(a.study, std::move(sides));  // checks the options: usage_error before anything runs
  session s(make_context(probe_system(), argv),
            {.json = a.json, .csv = {}, .progress = !a.quiet, .verbose = false, .watchdog_s = a.watchdog});
  return s.finish(s.run(study));
}

command add_beside_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("beside", "a copy beside compute: what each way of copying takes from the work "
                                           "running beside it, and the work from the copy");
  auto a = std::make_shared<beside_args>();
  cmd->footer(fmt::format(
      "Each round measures a way of copying and a workload alone, both at once (their rates beside each\n"
      "other: the copy's GB/s, the workload's slowdown), and one job of both at once: the joint time, what a\n"
      "program pays. A finding names the way that finishes both first where it is not the fastest alone.\n"
      "Every way moves the same bytes a step (--blocks x --block-size): plain and staged from pageable memory,\n"
      "copy (one contiguous copy) and the block copier's ways loop, batch, kernel and pack from pinned memory;\n"
      "auto and auto-beside are the block copier choosing by its policy alone or beside_compute: each\n"
      "is checked against the best way beside each workload (the file's \"choices\").\n"
      "On cuda-rt the workloads run on the GPU (gpu-compute: multiply-adds on every multiprocessor;\n"
      "gpu-memory: a device-to-device stream) or on the CPUs ({}); on the host backend every copy\n"
      "is CPU work, the \"device\" memory host memory. Ways: {}.\n"
      "Examples:\n"
      "  xferbench beside                                      every way beside every workload\n"
      "  xferbench beside --workloads cpu-compute --threads 8 --rounds 9 --json beside.json\n"
      "  xferbench beside --ways copy,pack --block-size 4K --blocks 16384 --direction d2h\n"
      "  xferbench beside -b cuda-rt --workloads gpu-compute --ways copy,batch,kernel,pack --rounds 9\n"
      "Exit codes: 0 ok, 1 a way failed (or its data did not arrive), 2 bad input, 128 + signal when stopped.",
      fmt::join(beside::cpu_workload_names(), ", "), fmt::join(beside::way_names(), ", ")));
  cmd->add_option("-b,--backend", a->backend, "host or cuda-rt (default: cuda-rt where a device can be used)")
      ->check(not_empty());
  cmd->add_option("--device", a->device, "the CUDA device (cuda-rt)")->capture_default_str()->check(not_negative());
  cmd->add_option("--workloads", a->study.workloads,
                  "workloads, comma-separated (default: every one the backend has)")
      ->delimiter(',')
      ->check(not_empty());
  cmd->add_option("--ways", a->study.ways,
                  fmt::format("ways of copying (default: {})", fmt::join(beside::way_names(), ",")))
      ->delimiter(',')
      ->check(not_empty());
  cmd->add_option("--direction", a->study.direction, "h2d or d2h")->capture_default_str();
  cmd->add_option("--block-size", a->block_size, "a block's bytes")->capture_default_str()->check(size_value());
  cmd->add_option("--blocks", a->study.blocks, "blocks a copy moves (the block list, scattered both sides)")
      ->capture_default_str()
      ->check(not_negative());
  cmd->add_option("--work-size", a->work_size, "the array cpu-memory reads each step")->capture_default_str()
      ->check(size_value());
  cmd->add_option("--threads", a->study.threads, "the workload's threads (0: every CPU this process may use)")
      ->capture_default_str();
  cmd->add_option("--seconds", a->study.seconds, "each phase of a round")->capture_default_str()
      ->check(number_in(0, 60, true, false, "more than 0, at most 60"));
  cmd->add_option("--rounds", a->study.rounds, "rounds, the ways in a rotated order each")->capture_default_str();
  add_watchdog_option(*cmd, a->watchdog, watchdog_for::study);
  add_json_option(*cmd, a->json, "the result file (schema xferbench/beside/v1)");
  add_quiet_flag(*cmd, a->quiet);
  return {cmd, [a](const std::vector<std::string>& argv) { return run_beside(*a, argv); }};
}

}  // namespace xfer::cli
