#include <algorithm>
#include <fmt/format.h>
#include <fmt/ostream.h>
#include <fmt/ranges.h>
#include <memory>
#include <optional>
#include <xfer/backends/registry.hpp>
#include <xfer/config.hpp>
#include <xfer/core/block_route.hpp>
#include <xfer/core/describe.hpp>
#include <xfer/core/errors.hpp>
#include <xfer/core/plan.hpp>
#include <xfer/core/settings_file.hpp>
#include <xfer/core/session.hpp>
#include <xfer/core/sweep.hpp>
#include <xfer/core/size.hpp>
#include <xfer/core/system_probe.hpp>

#include "commands.hpp"
#include "options.hpp"

namespace xfer::cli {

struct sweep_args {
  // What the options name directly (full: false, the overview, unless --full);
  // the sizes and directions are parsed from the options below.
  selection sel;
  std::vector<std::string> directions;
  // Unset options take core's defaults (measure_options, default_sizes), or
  // --quick's where it is given.
  std::optional<std::string> min, max;
  std::string sizes;
  bool quick = false, dense = false;
  // The many-blocks workload (core/block_route.hpp): --blocks, or implied by
  // any of its options.
  bool blocks = false;
  std::string block_sizes, blocks_total, block_pairs;
  measure_args measure;
  std::optional<double> budget;
  unsigned threads = 0;
  std::string alignment = "4K";
  std::size_t unaligned_offset = 16;
  bool quiet = false, verbose = false, brief = false;
  bool together = false, together_only = false;  // every selected device of a backend at once
  int host_devices = 1;
  std::string json, csv;
  std::string settings;  // a file whose settings to replay
};

// The sampling settings in the run's settings log, each from its option or
// core's default (the command line itself is config.argv).
static void record_sampling_settings(const sweep_args& a, const measure_options& o) {
  const auto put = [](const char* name, double value, bool given, const char* option) {
    mem::record_setting({"sampling", "", name, fmt::format("{:g}", value),
                         given ? mem::setting_source::argument : mem::setting_source::default_value,
                         given ? option : ""});
  };
  put("target_ci", o.target_ci, a.measure.target_ci.has_value(), "--target-ci");
  put("max_time_s", o.max_time_s, a.measure.max_time.has_value(), "--max-time");
  put("budget_s", o.run_budget_s, a.budget.has_value(), "--budget");
  put("warmup_s", o.warmup_s, a.measure.warmup.has_value(), "--warmup");
}

static int run_sweep(const sweep_args& a, const std::vector<std::string>& argv) {
  // ---- validate everything before measuring anything ----
  // A replay's settings replace the environment's for the whole run: no
  // cache read, no calibration (xfer/mem/settings.hpp).
  if (!a.settings.empty()) {
    mem::library_inputs in;
    try {
      in = mem::inputs_for_replay(read_settings_file(a.settings), a.settings);
    } catch (const std::invalid_argument& e) {
      if (dynamic_cast<const usage_error*>(&e)) throw;
      throw usage_error(fmt::format("--settings: {}", e.what()));  // a value the file holds, named
    }
    in.notify = mem::current_inputs()->notify;
    mem::forget_recorded_settings();
    mem::install_inputs(std::move(in));
  }
  measure_options opts = measure_from(a.measure, a.quick ? measure_options::quick() : measure_options{});
  selection sel = a.sel;
  sel.sizes_given = !a.sizes.empty() || a.min || a.max;
  const bool blocks = a.blocks || !a.block_sizes.empty() || !a.blocks_total.empty() || !a.block_pairs.empty();
  if (blocks && sel.sizes_given)
    throw usage_error("--blocks measures arrays of --blocks-total bytes in blocks of --block-sizes: give those, not "
                      "--sizes, --min or --max");
  // The block workload's own default grid runs on the overview's budget too.
  const bool overview = (!sel.full || blocks) && !a.dense && !a.quick && !sel.sizes_given &&
                        (!blocks || (a.block_sizes.empty() && a.blocks_total.empty()));
  opts.run_budget_s = run_budget_for(a.budget, a.measure.max_time.has_value(), a.quick, overview);
  if (blocks) {
    // Each list's errors name its option (two size lists in one command).
    const auto sizes_of = [](const std::string& option, const std::string& text) {
      try {
        return parse_size_list(text);
      } catch (const usage_error& e) {
        throw usage_error(fmt::format("{}: {}", option, e.what()));
      }
    };
    sel.sizes = a.blocks_total.empty() ? default_block_totals(a.dense) : sizes_of("--blocks-total", a.blocks_total);
    sel.block_sizes = a.block_sizes.empty() ? default_block_sizes(a.dense) : sizes_of("--block-sizes", a.block_sizes);
    if (!a.block_pairs.empty())
      sel.block_list = std::make_shared<const std::vector<block_pair_spec>>(parse_block_pairs(a.block_pairs));
    opts.samples_floor = std::max(opts.samples_floor, block_samples_floor);
  } else if (!a.sizes.empty())
    sel.sizes = parse_size_list(a.sizes);
  else if (a.min || a.max)
    sel.sizes = pow2_range(a.min ? parse_size(*a.min) : default_min_size, a.max ? parse_size(*a.max) : default_max_size);
  else
    sel.sizes = default_sizes(a.quick ? size_grid::quick : a.dense ? size_grid::dense : size_grid::overview);
  const system_info sys = probe_system();
  check_sizes_fit(sel.sizes, sys.memory_bytes);
  for (const auto& d : a.directions) sel.directions.push_back(parse_direction(d));

  backend_options bopts;
  bopts.threads = a.threads;
  check_host_devices(a.host_devices, sel.backends);
  bopts.host_devices = a.host_devices;
  bopts.kinds = parse_kind_options(a.alignment, a.unaligned_offset);
  auto entries = make_backends(bopts);
  const plan planned = make_plan(entries, sel);
  check_budget_fits(planned, opts);

  // ---- run ----
  run_context ctx = make_context(sys, argv);
  std::vector<std::string> names;
  for (const auto& b : planned.backends) names.push_back(add_backend(ctx, *b.impl));
  ctx.config = value::object{{"argv", argv},
                {"backends", names},
                {"sizes", sel.sizes},
                {"target_ci", opts.target_ci},
                {"max_time_s", opts.max_time_s},
                {"budget_s", opts.run_budget_s},
                {"full", sel.full},
                {"warmup_s", opts.warmup_s},
                {"verify", opts.verify},
                {"affinity", opts.affinity},
                {"quick", a.quick},
                {"dense", a.dense},
                {"alignment", bopts.kinds.alignment},
                {"unaligned_offset", a.unaligned_offset},
                {"together", a.together_only ? "only" : a.together ? "after alone" : "no"},
                {"host_devices", a.host_devices}};
  if (!a.settings.empty()) ctx.config["settings_replayed_from"] = a.settings;
  record_sampling_settings(a, opts);
  if (blocks) {
    ctx.config["block_sizes"] = sel.block_sizes;
    ctx.config["block_list"] = a.block_pairs.empty() ? std::string("scattered") : a.block_pairs;
    ctx.config["samples_floor"] = opts.samples_floor;
  }
  session run(std::move(ctx),
              {.json = a.json, .csv = a.csv, .progress = !a.quiet, .verbose = a.verbose, .brief = a.brief});
  if (!a.settings.empty())
    fmt::print(run.console(), "settings: replayed from {} (no cache read, no calibration, XFER_* variables not read)\n",
               a.settings);
  using mode = session::devices_mode;
  return run.finish(run.run(planned, opts, a.together_only ? mode::together : a.together ? mode::alone_then_together : mode::alone));
}

namespace {

// "1,16,256,4K,64K,1M,16M,64M": the overview's grid as the help names it, from the grid itself.
std::string overview_sizes_text() {
  std::string out;
  for (const auto b : default_sizes()) out += (out.empty() ? "" : ",") + format_size(b);
  return out;
}

}  // namespace

command add_sweep_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("sweep", "measure every selected backend x route x host memory x direction x size");
  auto a = std::make_shared<sweep_args>();
  cmd->footer(
      "Examples:\n"
      "  xferbench sweep                                   the overview: every backend, 8 sizes (1 B to 64 MiB),\n"
      "                                                    h2d and d2h, each backend's plain and fast kinds, in about\n"
      "                                                    75 s (--budget)\n"
      "  xferbench sweep --full                            every kind and direction too (bidir, rw, d2d)\n"
      "  xferbench sweep --dense -b cuda-rt                 every power of two, 1 B to 256 MiB\n"
      "  xferbench sweep --quick --json r.json             a coarse run in seconds\n"
      "  xferbench sweep -b host -m pageable,aligned -d h2d --sizes 4K,1M,1.5G\n"
      "  xferbench sweep -b cuda-rt -r copy-async -m pinned --sizes 256M --together\n"
      "                                                    every GPU alone, then all at once (per GPU + aggregate)\n"
      "Sizes take binary suffixes: 4K = 4096, 1.5G = 1610612736.\n"
      "Exit codes: 0 all points ok or skipped, 1 a point failed or a backend is unavailable,\n"
      "2 bad input, 128 + signal when stopped by SIGINT (130), SIGTERM (143) or SIGHUP (129),\n"
      "141 when the console's reader went away (`| head`) (the completed points are still written).");
  add_backends_option(*cmd, a->sel.backends,
                      fmt::format("backends: {}; default: every available one", backend_names_help()));
  add_devices_option(*cmd, a->sel.devices, "device indices (default: all)");
  cmd->add_option("-r,--route", a->sel.routes, "routes (see `xferbench list`; default: all)")->delimiter(',');
  cmd->add_option("-m,--memory", a->sel.host_memory,
                 "host memory kinds (default: the plain pageable ones and each backend's own fast kind, such as "
                 "pinned; --full: all the backend offers)")
      ->delimiter(',');
  cmd->add_option("-d,--direction", a->directions,
                 "h2d, d2h, bidir, rw (write then read back), d2d (default: h2d and d2h; --full: all)")
      ->delimiter(',');
  a->sel.full = false;
  cmd->add_flag("--full", a->sel.full,
               "the full matrix: every host memory kind and direction each backend offers where -m or -d name none "
               "(several times the overview's points; with --dense, every power of two too)");
  const measure_options defaults;
  cmd->add_option("--min", a->min, fmt::format("smallest size of the power-of-two range (default: {})",
                                             format_size(default_min_size)))
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  cmd->add_option("--max", a->max,
                  fmt::format("largest size of the power-of-two range that --dense or --min/--max measure (default: "
                              "{}; the overview's sizes end at {})",
                              format_size(default_max_size), format_size(default_sizes().back())))
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  add_sizes_option(*cmd, a->sizes, "explicit comma-separated sizes instead of the range (4,4K,1M,1.5G)");
  cmd->add_flag("--dense", a->dense,
               fmt::format("every power of two from {} to {} instead of the overview's {}",
                           format_size(default_min_size), format_size(default_max_size), overview_sizes_text()));
  cmd->add_flag("--quick", a->quick, "coarse and fast: sizes x16 apart up to 16M, 10 ms a point, 5% CI target");
  cmd->add_flag("--blocks", a->blocks,
               "the many-blocks workload instead (docs/blocks.md): arrays of --blocks-total bytes moved as blocks of "
               "--block-sizes between scattered host and device places (a fixed-seed list), through each way of "
               "libxfer's block copier alone, its own choice, and one contiguous copy of the whole array; h2d and d2h");
  cmd->add_option("--block-sizes", a->block_sizes,
                 "block sizes of --blocks (default: 4K,16K,64K,256K,1M,2M; --dense: every power of two 4K to 2M); "
                 "implies --blocks");
  cmd->add_option("--blocks-total", a->blocks_total,
                 "array sizes of --blocks, each a whole number of every block size (default: 64M; --dense: "
                 "16M,64M,256M); implies --blocks");
  cmd->add_option("--block-pairs", a->block_pairs,
                 "the block list instead of the scattered one: SRC:DST,... (block indices; no destination block "
                 "twice); implies --blocks");
  add_target_ci_option(*cmd, a->measure.target_ci);
  cmd->add_option("--budget", a->budget,
                 fmt::format("the whole sweep's wall-clock target, seconds: each point samples for what is left over "
                             "the points left, so quiet points leave time to noisy ones (default: {:g} for the "
                             "overview; other selections take --max-time per point)",
                             overview_budget_s))
      ->check(number_in(0, 86400, true, false, "(0, 86400] seconds"))
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  add_max_time_option(*cmd, a->measure.max_time, measure_options{}.max_time_s,
                      " where the selection is not the overview, whose --budget is shared by its points");
  add_warmup_option(*cmd, a->measure.warmup);
  add_watchdog_option(*cmd, a->measure.watchdog);
  add_threads_option(*cmd, a->threads);
  cmd->add_option("--alignment", a->alignment, "alignment of the 'aligned' kind: a power of two from 8 to 1G (4K, 2M)")
      ->capture_default_str()
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  cmd->add_option("--unaligned-offset", a->unaligned_offset, "offset past a page of 'pageable-unaligned', bytes")
      ->check(not_negative())
      ->capture_default_str()
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  cmd->add_flag("--together", a->together,
               "after the sweep, measure each point on every selected device of a backend at once (one thread per "
               "device, near its NUMA node, samples in shared windows): each device's rate and the aggregate "
               "(all bytes / the windows' wall time); docs/fleet.md");
  cmd->add_flag("--together-only", a->together_only, "as --together, without the one-device-at-a-time sweep first");
  add_host_devices_option(*cmd, a->host_devices);
  add_no_verify_flag(*cmd, a->measure.no_verify);
  add_no_affinity_flag(*cmd, a->measure.no_affinity);
  add_json_option(*cmd, a->json, "the result file (schema xferbench/result/v2)");
  cmd->add_option("--settings", a->settings,
                  "replay the settings another run recorded (a result file's config.settings, or a settings file): "
                  "the staged copier's tuning and the block copier's rankings per device, the spin, the staging "
                  "team; no cache read and no calibration, the environment's XFER_* variables not read (docs/usage.md)")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  add_csv_option(*cmd, a->csv);
  add_quiet_flag(*cmd, a->quiet);
  cmd->add_flag("-v,--verbose", a->verbose,
               "a row per point on the console as it completes (default: a summary table per backend at the end; "
               "every point is in the --json and --csv files either way)");
  cmd->add_flag("--brief", a->brief,
               "the summary as one line per backend and device: each direction's peak, where it is reached, how many "
               "points converged (scripts/run.sh's console; every curve is in the report's peak tables)");
  return {cmd, [a](const std::vector<std::string>& argv) { return run_sweep(*a, argv); }};
}

}  // namespace xfer::cli
