#pragma once
// Where results leave the process: the one helper every command writes its
// files through (DESIGN.md, "Errors and bad input").
//
// A regular file, or one not there yet, is replaced whole or not at all (a
// temporary file in the same directory, fsync, rename), so a crash never
// leaves half a result; its mode and owner are kept. A file with several hard
// links, or one whose owner a new file could not be given, is written in place
// instead (its space reserved first): a rename would cut it from its other
// names or hand it to us. The report tool writes by the same rules
// (python/xferbench_report/output.py); tests/cli/test_outputs.py holds both to them. A symbolic link is followed and its target replaced,
// so the link stays a link. Anything else that can be written (standard
// output as "-" or /dev/stdout, a character device, a FIFO) is written in
// place and never replaced: renaming over /dev/null or a FIFO someone reads
// from would destroy it.
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

// Writes `text` as the whole content of `path`, as described at the top.
// Every write, sync, rename and close is checked; throws std::runtime_error
// naming the path and the system's reason. A temporary file is removed on
// failure.
void write_output(const std::filesystem::path& path, std::string_view text);

// Call once, at the end of main: flushes standard output and checks that
// nothing written to it was lost (`xferbench list > /dev/full`, a closed
// pipe, a full disk). Throws std::runtime_error saying why.
void close_stdout();

}  // namespace xfer
