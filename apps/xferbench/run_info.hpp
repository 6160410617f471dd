#pragma once
// What every result file starts with: tool, time, system, command line.
#include <ctime>
#include <string>
#include <vector>
#include <xfer/config.hpp>
#include <xfer/core/result.hpp>

namespace xfer::cli {

inline std::string utc_now() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

// A command's context for its session: the config starts with the command
// line; a study adds the parameters it resolved to (study_info::config).
inline run_context make_context(const system_info& sys, const std::vector<std::string>& argv) {
  run_context c;
  c.tool_version = XFER_VERSION;
  c.started_at = utc_now();
  c.system = sys;
  c.config = value::object{{"argv", argv}};
  return c;
}

}  // namespace xfer::cli
