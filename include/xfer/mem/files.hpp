#pragma once
// The one writer of every file xferbench and libxfer write, outputs and caches
// alike (DESIGN.md, "Errors and bad input"; issue 49), and the one bounded
// reader of the caches.
//
// A regular file, or one not there yet, is replaced whole or not at all (a
// temporary file in the same directory, fsync, rename), so a crash never
// leaves half a file; its mode and owner are kept. A file with several hard
// links, or one whose owner a new file could not be given, is written in place
// instead (its space reserved first): a rename would cut it from its other
// names or hand it to us. A symbolic link is followed and its target replaced,
// so the link stays a link. Anything else that can be written (standard
// output as "-" or /dev/stdout, a character device, a FIFO) is an output
// written in place and never replaced: renaming over /dev/null or a FIFO
// someone reads from would destroy it. A cache is written only where it is a
// regular file or not there yet.
//
// xfer/core/output_file.hpp builds the commands' outputs on this; the report
// tool writes by the same rules (python/xferbench_report/output.py).
#include <cstddef>
#include <filesystem>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <sys/types.h>
#include <utility>

namespace xfer::mem {

// Why a file cannot be written or read, without the path (the caller names it).
struct file_problem : std::runtime_error {
  using std::runtime_error::runtime_error;
};

enum class file_target_kind {
  replace,          // a regular file, or none yet: replaced whole
  stream,           // a character device, FIFO or socket: written in place, never replaced
  standard_output,  // "-", or the file standard output already is
};

// A path resolved once, for checking and for writing.
struct file_target {
  file_target_kind kind = file_target_kind::replace;
  std::filesystem::path path;  // replace: the file renamed over (links followed); stream: what is opened
  std::optional<std::pair<dev_t, ino_t>> identity;  // for a file that exists
  mode_t mode = 0666;  // an existing file's permissions, kept across the replacement
  std::optional<std::pair<uid_t, gid_t>> owner;  // an existing file's owner, kept too
  bool linked = false;  // several hard links: written in place
};

// Throws file_problem: a directory, a block device, a write-protected file, a
// link loop, an empty name.
file_target resolve_file_target(const std::filesystem::path& path);
// Proves the target can be written (a file created and removed beside a
// regular one; a stream is writable). Throws file_problem.
void check_file_target(const file_target& t);
// The same file: the same inode where both exist, else the same path with
// links and "." / ".." resolved. Standard output is one file however named.
bool same_file_target(const file_target& a, const file_target& b);
// Writes `text` as the target's whole content. A FIFO or device is opened and
// written without blocking: waiting for a reader, or for one to take more,
// goes on only while `keep_waiting()` says so (asked every 50 ms; unset:
// always), so no wait outlasts a stop request. Every write, sync, rename and
// close is checked. Throws file_problem.
void write_file_target(const file_target& t, std::string_view text, const std::function<bool()>& keep_waiting = {});

// ---- reading ----------------------------------------------------------------

// The whole text of a regular file (links followed) of at most `max_bytes`.
// Anything else is refused without waiting: a FIFO or device is never opened
// for reading (a FIFO with no writer would wait forever, /dev/zero never
// ends). Throws file_problem saying why.
std::string read_regular_file(const std::filesystem::path& path, std::size_t max_bytes);

// ---- caches -----------------------------------------------------------------

// The largest cache file read (a cache holds a line per device and key; a
// larger file is not ours, or damaged).
inline constexpr std::size_t max_cache_bytes = 1 << 20;

// True where a cache setting means "no cache": "off", or /dev/null (the
// natural way to turn a file off, which is never written or replaced).
bool cache_turned_off(std::string_view setting);

// A cache's text: nothing where it is not there. A cache that is not a regular
// file (a device, a FIFO: read without waiting, never read to the end), or is
// larger than max_cache_bytes, is ignored with one line on stderr (once per
// path and process).
std::optional<std::string> read_cache(const std::filesystem::path& path);
// Writes a cache whole, like an output, but only where it is a regular file no
// larger than max_cache_bytes or not there yet (its directory made); anything
// else, or a write that fails, is
// left as it is with one line on stderr (once per path and process). Never throws.
void write_cache(const std::filesystem::path& path, std::string_view text);

}  // namespace xfer::mem
