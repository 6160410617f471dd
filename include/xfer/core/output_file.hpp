#pragma once
// Where results leave the process: the one helper every command writes its
// files through (DESIGN.md, "Errors and bad input"), on libxfer's one writer
// (xfer/mem/files.hpp says how each kind of path is written). The report tool
// writes by the same rules (python/xferbench_report/output.py);
// tests/cli/test_outputs.py holds both to them.
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace xfer {

// An output as the user named it: the option (for messages) and the path.
struct named_output {
  std::string option;  // "--json"
  std::string path;    // empty: the option was not given (skipped)
};

// Before a run, so nothing measured is lost to a typo: each output can be
// written (its directory exists and takes a new file; a device or FIFO is
// writable; it is not a directory or a block device), and no two are the same
// file: the same device and inode, or, for files not there yet, the same path
// once links and "." / ".." are resolved. Throws usage_error naming the option
// and the path.
void check_outputs(const std::vector<named_output>& outputs);
// check_outputs for one path, with no option to name.
void check_writable(const std::filesystem::path& path);

// True when `path` is "-" or the very file standard output already is
// (/dev/stdout, /proc/self/fd/1, or the file stdout was redirected to). A
// command then sends its console table to stderr, so stdout carries the
// result alone. False for paths that cannot be resolved.
bool writes_to_stdout(const std::filesystem::path& path);

// Writes `text` as the whole content of `path` (xfer/mem/files.hpp). A FIFO
// with no reader is waited for until the next stop signal. Every write, sync,
// rename and close is checked; throws std::runtime_error naming the path and
// the system's reason. A temporary file is removed on failure.
void write_output(const std::filesystem::path& path, std::string_view text);

// Call once, at the end of main: flushes standard output and checks that
// nothing written to it was lost (`xferbench list > /dev/full`, a closed
// pipe, a full disk). Throws std::runtime_error saying why.
void close_stdout();

}  // namespace xfer
