#pragma once
// What the session and study tests share: a scratch folder and a fixed run context.
#include <filesystem>
#include <string>
#include <unistd.h>
#include <xfer/core/result.hpp>

namespace xfer::test {

inline std::filesystem::path temp_dir(const std::string& prefix) {
  auto d = std::filesystem::temp_directory_path() / (prefix + std::to_string(::getpid()));
  std::filesystem::create_directories(d);
  return d;
}

// A context whose command line is `xferbench <command>`.
inline run_context test_context(const std::string& command) {
  run_context c;
  c.tool_version = "test";
  c.started_at = "2026-01-01T00:00:00Z";
  c.config = value::object{{"argv", std::vector<std::string>{"xferbench", command}}};
  return c;
}

}  // namespace xfer::test
