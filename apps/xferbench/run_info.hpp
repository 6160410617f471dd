#pragma once
// The header every result file starts with: tool, time, system, command line.
#include <ctime>
#include <nlohmann/json.hpp>
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

inline nlohmann::json run_header(const system_info& sys, const std::vector<std::string>& argv) {
  return {{"tool", {{"name", "xferbench"}, {"version", XFER_VERSION}}},
          {"started_at", utc_now()},
          {"system", sys},
          {"config", {{"argv", argv}}}};
}

}  // namespace xfer::cli
