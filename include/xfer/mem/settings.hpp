#pragma once
// What shapes a measurement besides its command line, and where each value
// came from (issue 51). Two halves:
//
// - library_inputs: what a program's front door hands libxfer once, before
//   any copier is made: its environment (inputs_from_environment, the one
//   place libxfer's variables are read), its arguments, or a replayed file
//   (inputs_for_replay). libxfer's own code reads no environment.
// - the settings log: each value a component resolved from those inputs, a
//   cache, a calibration or its defaults (record_setting), with its source.
//   A result file writes the log as config.settings, and a replay reads it
//   back.
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>
#include <xfer/mem/blocks/block_copier.hpp>
#include <xfer/mem/staged/staging_budget.hpp>
#include <xfer/mem/staged/tuning.hpp>

namespace xfer::mem {

enum class setting_source { default_value, environment, argument, cache, calibration, replay };
// "default", "environment", "argument", "cache", "calibration", "replay".
std::string_view to_string(setting_source s) noexcept;
setting_source parse_setting_source(std::string_view s);  // throws std::invalid_argument

// One resolved value. component: "staged", "staging-budget", "blocks",
// "spin", "vulkan-copy", "trace", "sampling". scope: "" for the whole
// process, else what it applies to (a staged tuning's or a block ranking's
// cache key). origin: the variable, argument, cache file or replayed file.
struct setting {
  std::string component;
  std::string scope;
  std::string name;
  std::string value;
  setting_source source = setting_source::default_value;
  std::string origin;
  bool operator==(const setting&) const = default;
};

// The Vulkan copy route's probe knobs (bench/vulkan_copy_probe.sh); the
// defaults are what a Vulkan program does.
struct vulkan_copy_inputs {
  std::string queues = "transfer";  // transfer, compute or mixed
  bool split = false;               // h2d and d2h as two halves on two queues
  std::uint64_t chunk_bytes = 0;    // per VkBufferCopy region; 0: one region
};

struct library_inputs {
  // The staged copier's fields fixed for every device (each names its origin).
  std::vector<staged_override> staged;
  // xferbench's cache directory ($XDG_CACHE_HOME/xfer or ~/.cache/xfer; empty:
  // none known), where the caches' files and a backend's own files go.
  std::string cache_dir;
  // The caches' files; empty: none (nothing read, nothing written).
  std::string staged_cache;
  std::string blocks_cache;
  std::optional<block_way> way;  // every block copy's way, unless a caller forces one
  std::optional<block_policy> blocks_policy;  // every block copier's policy, unless a caller gives one
  std::optional<std::uint64_t> spin_us;
  // The process's staging budget's options; none: each copier a team of its own.
  std::optional<staging_budget_options> budget = staging_budget_options{};
  std::string staged_trace;  // each staged copy appends its stages' times here; empty: off
  vulkan_copy_inputs vulkan_copy;
  // Where the process-wide values above came from, per setting name
  // ("staged_cache", "block_way", "block_policy", "spin_us", "shared", "budget_threads",
  // "trace", "vulkan_queues", "vulkan_split", "vulkan_chunk_bytes"); absent:
  // the default.
  std::vector<std::pair<std::string, std::pair<setting_source, std::string>>> origins;
  // A replayed run's settings (inputs_for_replay): used instead of any cache,
  // calibration or default, keyed by scope; replay_file names the file.
  std::vector<setting> replay;
  std::string replay_file;
  // Called with each notice (a cache ignored, a replayed scope missing),
  // besides its place in the log; the CLI prints it on stderr.
  std::function<void(const std::string&)> notify;
};

// libxfer's variables read and checked: XFER_STAGED_* (tuning.hpp,
// staging_budget.hpp), XFER_STAGED_TUNING_CACHE and XFER_BLOCKS_CACHE ("off":
// none; defaults under $XDG_CACHE_HOME/xfer or ~/.cache/xfer),
// XFER_BLOCKS_WAY, XFER_BLOCKS_POLICY, XFER_SPIN_US, XFER_STAGED_TRACE, XFER_VK_COPY_*.
// Throws std::invalid_argument naming the first bad one.
library_inputs inputs_from_environment();
// A run's settings (a result file's config.settings) as inputs: the staged
// tunings and block rankings by scope, the process-wide values as recorded;
// no cache file (a replay reads none and writes none). Throws
// std::invalid_argument for a value that does not parse.
library_inputs inputs_for_replay(const std::vector<setting>& settings, std::string file);

// Installs the inputs for this process (replacing any before; copiers made
// earlier keep what they resolved) and records the process-wide ones in the
// log. Until a front door installs any, libxfer runs on its defaults with no
// cache files.
void install_inputs(library_inputs inputs);
std::shared_ptr<const library_inputs> current_inputs();

// A replayed setting for (component, scope, name): the exact scope, else one
// whose scope equals it past the first '/' (the host name of a cache key),
// else none.
const setting* replayed(const library_inputs& in, std::string_view component, std::string_view scope,
                        std::string_view name);

// ---- The settings log -------------------------------------------------------
// Replaces an entry of the same (component, scope, name). Thread-safe.
void record_setting(setting s);
std::vector<setting> recorded_settings();  // in the order first recorded
// One line for a person (a cache ignored and why); kept in the log, and
// passed to the installed inputs' notify.
void record_notice(std::string line);
std::vector<std::string> recorded_notices();
void forget_recorded_settings();  // for tests

// This machine as a cache entry records it: the CPU's model name
// (/proc/cpuinfo), so a cache copied from another machine is not used.
std::string cpu_model();

}  // namespace xfer::mem
