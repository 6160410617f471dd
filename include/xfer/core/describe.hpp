#pragma once
// What a command says about the machine before measuring anything, as text
// (`xferbench info`, `xferbench list`), and the context every result file
// starts with: kept in core so the CLI only maps options to calls.
#include <string>
#include <vector>
#include <xfer/core/backend.hpp>
#include <xfer/core/result.hpp>

namespace xfer {

// CPU, OS, memory, NUMA nodes, huge pages and each accelerator's PCIe link.
std::string system_text(const system_info& s);

// Each backend with its versions, devices, routes and host memory kinds, or
// why it is unavailable.
std::string backends_text(const std::vector<backend_entry>& entries);

// The current time in UTC, ISO 8601 (2026-01-02T03:04:05Z).
std::string utc_now();

// A command's context for its session: tool version, start time, the system,
// and a config that starts with the command line; a command or study adds
// the parameters it resolved to.
run_context make_context(const system_info& sys, const std::vector<std::string>& argv);
// Records a backend that measures in this run (its versions, in the system
// section); returns its name, for the config's list of backends.
std::string add_backend(run_context& c, const backend& b);

}  // namespace xfer
