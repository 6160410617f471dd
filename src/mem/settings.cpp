// The front door's resolver (inputs_from_environment: the one place libxfer's
// variables are read), a replay's inputs, and the settings log (settings.hpp).
#include <xfer/mem/settings.hpp>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <stdexcept>
#include <fmt/format.h>
#include <xfer/mem/files.hpp>
#include <xfer/mem/numbers.hpp>
#include <xfer/mem/spin_wait.hpp>

namespace xfer::mem {

namespace {

constexpr std::string_view source_names[] = {"default", "environment", "argument", "cache", "calibration", "replay"};

// A variable's text; none where it is unset or empty (empty means unset).
std::optional<std::string> variable(const char* name) {
  const char* v = std::getenv(name);
  if (!v || !*v) return std::nullopt;
  return std::string(v);
}

std::string cache_dir() {
  if (auto x = variable("XDG_CACHE_HOME")) return *x + "/xfer";
  if (auto h = variable("HOME")) return *h + "/.cache/xfer";
  return {};
}

// A cache variable's file: the variable's ("off" or /dev/null: none), else
// `name` under the cache directory (none without one).
std::string cache_file(library_inputs& in, const char* var, const char* setting_name, const char* name) {
  if (const char* v = std::getenv(var)) {
    in.origins.push_back({setting_name, {setting_source::environment, var}});
    return cache_turned_off(v) ? "" : v;
  }
  const std::string dir = cache_dir();
  return dir.empty() ? "" : dir + "/" + name;
}

bool parse_switch(const std::string& text, const std::string& name) {
  return parse_count(text, name, 0, 1) == 1;
}

std::mutex log_mutex;
std::vector<setting>& log() {
  static std::vector<setting> l;
  return l;
}
std::vector<std::string>& notices() {
  static std::vector<std::string> n;
  return n;
}

std::mutex inputs_mutex;
std::shared_ptr<const library_inputs>& installed() {
  static std::shared_ptr<const library_inputs> in = std::make_shared<const library_inputs>();
  return in;
}

std::pair<setting_source, std::string> origin_of(const library_inputs& in, std::string_view name) {
  for (const auto& [n, o] : in.origins)
    if (n == name) return o;
  return {setting_source::default_value, ""};
}

}  // namespace

std::string_view to_string(setting_source s) noexcept { return source_names[static_cast<int>(s)]; }

setting_source parse_setting_source(std::string_view s) {
  for (std::size_t i = 0; i < std::size(source_names); ++i)
    if (source_names[i] == s) return static_cast<setting_source>(i);
  throw std::invalid_argument(fmt::format("'{}' is not a setting's source", s));
}

library_inputs inputs_from_environment() {
  library_inputs in;
  in.cache_dir = cache_dir();
  for (const staged_field f : all_staged_fields)
    if (auto v = variable(staged_variable(f))) in.staged.push_back({f, staged_variable(f), *v});
  (void)apply_staged_overrides({}, in.staged);  // each checked now, naming its variable
  in.staged_cache = cache_file(in, "XFER_STAGED_TUNING_CACHE", "staged_cache", "staged-tuning");
  // The block copier's file sits beside the staged copier's (none when that is off).
  if (const char* v = std::getenv("XFER_BLOCKS_CACHE")) {
    in.blocks_cache = cache_turned_off(v) ? "" : v;
    in.origins.push_back({"blocks_cache", {setting_source::environment, "XFER_BLOCKS_CACHE"}});
  } else if (!in.staged_cache.empty()) {
    in.blocks_cache = (std::filesystem::path(in.staged_cache).parent_path() / "block-ways").string();
  }
  if (auto v = variable("XFER_BLOCKS_WAY")) {
    in.way = parse_block_way(*v, "XFER_BLOCKS_WAY");
    in.origins.push_back({"block_way", {setting_source::environment, "XFER_BLOCKS_WAY"}});
  }
  if (auto v = variable("XFER_BLOCKS_POLICY")) {
    in.blocks_policy = parse_block_policy(*v, "XFER_BLOCKS_POLICY");
    in.origins.push_back({"block_policy", {setting_source::environment, "XFER_BLOCKS_POLICY"}});
  }
  if (auto v = variable("XFER_SPIN_US")) {
    in.spin_us = parse_count(*v, "XFER_SPIN_US", 0, max_spin_us);
    in.origins.push_back({"spin_us", {setting_source::environment, "XFER_SPIN_US"}});
  }
  // The switches parse as the XFER_STAGED_* overrides do: XFER_STAGED_SHARED
  // 0 or 1, XFER_STAGED_BUDGET_THREADS within the thread count's bounds.
  if (auto v = variable("XFER_STAGED_BUDGET_THREADS")) {
    in.budget->threads = static_cast<unsigned>(parse_count(*v, "XFER_STAGED_BUDGET_THREADS", 1, max_staged_threads));
    in.origins.push_back({"budget_threads", {setting_source::environment, "XFER_STAGED_BUDGET_THREADS"}});
  }
  if (auto v = variable("XFER_STAGED_SHARED")) {
    if (!parse_switch(*v, "XFER_STAGED_SHARED")) in.budget.reset();
    in.origins.push_back({"shared", {setting_source::environment, "XFER_STAGED_SHARED"}});
  }
  if (auto v = variable("XFER_STAGED_TRACE")) {
    in.staged_trace = *v;
    in.origins.push_back({"trace", {setting_source::environment, "XFER_STAGED_TRACE"}});
  }
  if (auto v = variable("XFER_VK_COPY_QUEUES")) {
    if (*v != "transfer" && *v != "compute" && *v != "mixed")
      throw std::invalid_argument(fmt::format("XFER_VK_COPY_QUEUES={}: expected transfer, compute or mixed", *v));
    in.vulkan_copy.queues = *v;
    in.origins.push_back({"vulkan_queues", {setting_source::environment, "XFER_VK_COPY_QUEUES"}});
  }
  if (auto v = variable("XFER_VK_COPY_SPLIT")) {
    in.vulkan_copy.split = parse_switch(*v, "XFER_VK_COPY_SPLIT");
    in.origins.push_back({"vulkan_split", {setting_source::environment, "XFER_VK_COPY_SPLIT"}});
  }
  if (auto v = variable("XFER_VK_COPY_CHUNK")) {
    in.vulkan_copy.chunk_bytes = parse_count(*v, "XFER_VK_COPY_CHUNK", 0, max_staged_chunk_bytes);
    in.origins.push_back({"vulkan_chunk_bytes", {setting_source::environment, "XFER_VK_COPY_CHUNK"}});
  }
  return in;
}

library_inputs inputs_for_replay(const std::vector<setting>& settings, std::string file) {
  library_inputs in;
  in.cache_dir = current_inputs()->cache_dir;
  in.replay_file = file;
  const auto from = [&](const char* name) {
    in.origins.push_back({name, {setting_source::replay, file}});
  };
  const auto what = [&](const setting& s) { return fmt::format("{} {} in {}", s.component, s.name, file); };
  for (const setting& s : settings) {
    if (!s.scope.empty()) {
      in.replay.push_back(s);
      continue;
    }
    if (s.component == "blocks" && s.name == "way" && s.value != "auto") {
      in.way = parse_block_way(s.value, what(s));
      from("block_way");
    } else if (s.component == "blocks" && s.name == "policy") {
      in.blocks_policy = parse_block_policy(s.value, what(s));
      from("block_policy");
    } else if (s.component == "spin" && s.name == "spin_us") {
      in.spin_us = parse_count(s.value, what(s), 0, max_spin_us);
      from("spin_us");
    } else if (s.component == "staging-budget" && s.name == "shared") {
      if (!parse_switch(s.value, what(s))) in.budget.reset();
      from("shared");
    } else if (s.component == "staging-budget" && s.name == "threads" && in.budget && s.value != "grows") {
      in.budget->threads = static_cast<unsigned>(parse_count(s.value, what(s), 1, max_staged_threads));
      from("budget_threads");
    } else if (s.component == "vulkan-copy" && s.name == "queues") {
      in.vulkan_copy.queues = s.value;
      from("vulkan_queues");
    } else if (s.component == "vulkan-copy" && s.name == "split") {
      in.vulkan_copy.split = parse_switch(s.value, what(s));
      from("vulkan_split");
    } else if (s.component == "vulkan-copy" && s.name == "chunk_bytes") {
      in.vulkan_copy.chunk_bytes = parse_count(s.value, what(s), 0, max_staged_chunk_bytes);
      from("vulkan_chunk_bytes");
    }
  }
  return in;
}

void install_inputs(library_inputs inputs) {
  auto in = std::make_shared<const library_inputs>(std::move(inputs));
  {
    std::lock_guard lock(inputs_mutex);
    installed() = in;
  }
  set_spin_before_sleep(in->spin_us);
  const auto put = [&](const char* component, const char* name, const char* key, std::string value) {
    auto [source, origin] = origin_of(*in, key);
    record_setting({component, "", name, std::move(value), source, std::move(origin)});
  };
  // The caches are not settings of their own: a value read from one says so
  // (source "cache", origin the file).
  put("blocks", "way", "block_way", in->way ? std::string(to_string(*in->way)) : "auto");
  put("blocks", "policy", "block_policy",
      std::string(to_string(in->blocks_policy.value_or(block_policy::alone))));
  put("spin", "spin_us", "spin_us", fmt::format("{}", spin_before_sleep().count()));
  put("staging-budget", "shared", "shared", in->budget ? "1" : "0");
  if (in->budget)
    put("staging-budget", "threads", "budget_threads",
        in->budget->threads ? fmt::format("{}", in->budget->threads) : "grows");
  if (!in->staged_trace.empty()) put("trace", "staged_trace", "trace", in->staged_trace);
}

std::shared_ptr<const library_inputs> current_inputs() {
  std::lock_guard lock(inputs_mutex);
  return installed();
}

const setting* replayed(const library_inputs& in, std::string_view component, std::string_view scope,
                        std::string_view name) {
  const auto past_host = [](std::string_view s) {
    const auto slash = s.find('/');
    return slash == std::string_view::npos ? s : s.substr(slash + 1);
  };
  const setting* near = nullptr;
  for (const setting& s : in.replay) {
    if (s.component != component || s.name != name) continue;
    if (s.scope == scope) return &s;
    if (!near && past_host(s.scope) == past_host(scope)) near = &s;
  }
  return near;
}

void record_setting(setting s) {
  std::lock_guard lock(log_mutex);
  auto& l = log();
  const auto same = std::find_if(l.begin(), l.end(), [&](const setting& e) {
    return e.component == s.component && e.scope == s.scope && e.name == s.name;
  });
  if (same != l.end()) *same = std::move(s);
  else l.push_back(std::move(s));
}

std::vector<setting> recorded_settings() {
  std::lock_guard lock(log_mutex);
  return log();
}

void record_notice(std::string line) {
  {
    std::lock_guard lock(log_mutex);
    if (std::find(notices().begin(), notices().end(), line) != notices().end()) return;  // once a process
    notices().push_back(line);
  }
  if (auto in = current_inputs(); in->notify) in->notify(line);
}

std::vector<std::string> recorded_notices() {
  std::lock_guard lock(log_mutex);
  return notices();
}

void forget_recorded_settings() {
  std::lock_guard lock(log_mutex);
  log().clear();
  notices().clear();
}

std::string cpu_model() {
  static const std::string model = [] {
    std::ifstream in("/proc/cpuinfo");
    for (std::string line; std::getline(in, line);) {
      if (line.rfind("model name", 0) != 0) continue;
      const auto colon = line.find(':');
      if (colon == std::string::npos) break;
      std::string m = line.substr(colon + 1);
      m.erase(0, m.find_first_not_of(" \t"));
      return m;
    }
    return std::string("unknown CPU");
  }();
  return model;
}

}  // namespace xfer::mem
