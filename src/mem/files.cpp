#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <fmt/format.h>
#include <mutex>
#include <poll.h>
#include <set>
#include <sys/stat.h>
#include <unistd.h>
#include <xfer/mem/files.hpp>

namespace xfer::mem {
namespace fs = std::filesystem;
namespace {

std::string reason(int err) { return std::strerror(err); }

std::optional<std::pair<dev_t, ino_t>> stdout_identity() {
  struct stat st {};
  if (::fstat(STDOUT_FILENO, &st) != 0) return std::nullopt;
  return std::make_pair(st.st_dev, st.st_ino);
}

// A dangling link (or a chain of them) is followed by hand: the file is
// created where the last link points, and the links stay links.
fs::path follow_links(fs::path p) {
  for (int hops = 0; hops < 40; ++hops) {  // the kernel's own limit
    struct stat st {};
    if (::lstat(p.c_str(), &st) != 0 || !S_ISLNK(st.st_mode)) return p;
    std::error_code ec;
    const fs::path target = fs::read_symlink(p, ec);
    if (ec) throw file_problem(ec.message());
    p = target.is_absolute() ? target : p.parent_path() / target;
  }
  throw file_problem(reason(ELOOP));
}

// A reader that has gone away (a closed pipe or FIFO) should be an error we
// report, not SIGPIPE ending the process before it says anything.
class sigpipe_ignored {
 public:
  sigpipe_ignored() {
    struct sigaction ignore {};
    ignore.sa_handler = SIG_IGN;
    sigemptyset(&ignore.sa_mask);
    ::sigaction(SIGPIPE, &ignore, &saved_);
  }
  ~sigpipe_ignored() { ::sigaction(SIGPIPE, &saved_, nullptr); }
  sigpipe_ignored(const sigpipe_ignored&) = delete;
  sigpipe_ignored& operator=(const sigpipe_ignored&) = delete;

 private:
  struct sigaction saved_ {};
};

// write(2) may take part of the text, or be interrupted by a signal (a
// second Ctrl-C while the result is being written): carry on until all is out.
// A descriptor opened without blocking (a FIFO, a device) that takes nothing
// now is waited on 50 ms at a time, while `keep_waiting` says so.
void write_all(int fd, std::string_view text, const std::function<bool()>& keep_waiting = {}) {
  while (!text.empty()) {
    const ssize_t n = ::write(fd, text.data(), text.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) {
        if (keep_waiting && !keep_waiting()) throw file_problem("its reader stopped reading, and a stop was requested");
        struct pollfd p {fd, POLLOUT, 0};
        ::poll(&p, 1, 50);
        continue;
      }
      throw file_problem(reason(errno));
    }
    text.remove_prefix(static_cast<std::size_t>(n));
  }
}

// A FIFO with no reader yet cannot be opened for writing without waiting; the
// wait is 50 ms at a time, while `keep_waiting` says so.
int open_stream(const fs::path& path, const std::function<bool()>& keep_waiting) {
  for (;;) {
    const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (fd >= 0) return fd;
    if (errno == EINTR) continue;
    if (errno != ENXIO) throw file_problem(reason(errno));
    if (keep_waiting && !keep_waiting()) throw file_problem("it is a FIFO nothing reads from, and a stop was requested");
    ::usleep(50'000);
  }
}

// Creates a new file beside `target` (the same file system, so the rename is
// atomic). O_EXCL: never reuse a name someone else holds.
int create_temporary(const fs::path& target, fs::path& tmp) {
  const fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
  for (int attempt = 0;; ++attempt) {
    tmp = dir / fmt::format(".{}.{}.{}.tmp", target.filename().string(), ::getpid(), attempt);
    const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd >= 0) return fd;
    if (errno != EEXIST || attempt >= 100) throw file_problem(reason(errno));
  }
}

// In place, not atomic: for a file a rename would change (its other hard links, an owner we
// cannot give a new file). Its space is reserved first, so a full disk fails before the old
// content is touched.
void write_in_place(const fs::path& path, std::string_view text) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) throw file_problem(reason(errno));
  try {
    const int rc = ::posix_fallocate(fd, 0, static_cast<off_t>(std::max<std::size_t>(text.size(), 1)));
    if (rc != 0 && rc != EOPNOTSUPP && rc != EINVAL && rc != ENODEV) throw file_problem(reason(rc));
    write_all(fd, text);
    if (::ftruncate(fd, static_cast<off_t>(text.size())) != 0 || ::fsync(fd) != 0) throw file_problem(reason(errno));
  } catch (...) {
    ::close(fd);
    throw;
  }
  if (::close(fd) != 0) throw file_problem(reason(errno));
}

// Whole or not at all. False, with nothing changed, when the existing file's owner cannot be
// given to the new one (another user's file we may write through its group): the caller then
// writes in place.
bool replace(const file_target& r, std::string_view text) {
  fs::path tmp;
  const int fd = create_temporary(r.path, tmp);
  try {
    try {
      if (r.owner && *r.owner != std::make_pair(::geteuid(), ::getegid()) &&
          ::fchown(fd, r.owner->first, r.owner->second) != 0) {
        if (errno != EPERM) throw file_problem(reason(errno));
        ::close(fd);
        ::unlink(tmp.c_str());
        return false;
      }
      // After the chown, which clears set-id bits.
      if (r.identity && ::fchmod(fd, r.mode) != 0) throw file_problem(reason(errno));
      write_all(fd, text);
      // Synced before the rename: otherwise a crash just after it can leave
      // the new name on an empty file.
      if (::fsync(fd) != 0) throw file_problem(reason(errno));
    } catch (...) {
      ::close(fd);
      throw;
    }
    if (::close(fd) != 0) throw file_problem(reason(errno));
    if (::rename(tmp.c_str(), r.path.c_str()) != 0) throw file_problem(reason(errno));
  } catch (...) {
    ::unlink(tmp.c_str());
    throw;
  }
  // The rename itself lives in the directory. Some file systems cannot sync
  // a directory (EINVAL); the file is in place either way.
  const fs::path dir = r.path.has_parent_path() ? r.path.parent_path() : fs::path(".");
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    const int rc = ::fsync(dfd), err = errno;
    ::close(dfd);
    if (rc != 0 && err != EINVAL) throw file_problem(reason(err));
  }
  return true;
}

}  // namespace

file_target resolve_file_target(const fs::path& path) {
  file_target r;
  if (path.empty()) throw file_problem("the file name is empty (give a path, or - for standard output)");
  const auto out = stdout_identity();
  if (path == "-") {
    r.kind = file_target_kind::standard_output;
    r.identity = out;
    return r;
  }
  // stat() first: the kernel follows /dev/stdout -> /proc/self/fd/1 ->
  // "pipe:[123]", which no path arithmetic could.
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) {
    r.identity = std::make_pair(st.st_dev, st.st_ino);
    if (r.identity == out) {
      r.kind = file_target_kind::standard_output;
      return r;
    }
    if (S_ISDIR(st.st_mode)) throw file_problem("it is a directory");
    if (S_ISBLK(st.st_mode)) throw file_problem("it is a block device (a result is never written over a disk)");
    if (S_ISREG(st.st_mode)) {
      // A rename would replace even a write-protected file; honour the
      // protection as `>` would.
      if (::access(path.c_str(), W_OK) != 0) throw file_problem(reason(errno));
      std::error_code ec;
      r.path = fs::canonical(path, ec);
      if (ec) throw file_problem(ec.message());
      r.mode = st.st_mode & 07777;
      r.owner = std::make_pair(st.st_uid, st.st_gid);
      r.linked = st.st_nlink > 1;
      return r;
    }
    r.kind = file_target_kind::stream;
    r.path = path;
    return r;
  }
  if (errno != ENOENT) throw file_problem(reason(errno));
  r.path = follow_links(path);
  return r;
}

bool same_file_target(const file_target& a, const file_target& b) {
  if (a.identity && b.identity) return *a.identity == *b.identity;
  if (a.kind == file_target_kind::standard_output || b.kind == file_target_kind::standard_output)
    return a.kind == b.kind;
  if (a.identity || b.identity) return false;
  std::error_code ea, eb;
  const auto ca = fs::weakly_canonical(fs::absolute(a.path), ea), cb = fs::weakly_canonical(fs::absolute(b.path), eb);
  return !ea && !eb && ca == cb;
}

void check_file_target(const file_target& r) {
  switch (r.kind) {
    case file_target_kind::standard_output:
      return;
    case file_target_kind::stream:
      if (::access(r.path.c_str(), W_OK) != 0) throw file_problem(reason(errno));
      return;
    case file_target_kind::replace: {
      // Proven by doing: create (and remove) a file where the result will go.
      fs::path tmp;
      const int fd = create_temporary(r.path, tmp);
      ::close(fd);
      ::unlink(tmp.c_str());
      return;
    }
  }
}

void write_file_target(const file_target& r, std::string_view text, const std::function<bool()>& keep_waiting) {
  switch (r.kind) {
    case file_target_kind::replace:
      if (r.linked || !replace(r, text)) write_in_place(r.path, text);
      return;
    case file_target_kind::standard_output: {
      // Whatever stdio still holds goes first, so the order is the order written.
      if (std::fflush(stdout) != 0) throw file_problem(reason(errno));
      sigpipe_ignored guard;
      write_all(STDOUT_FILENO, text);
      return;
    }
    case file_target_kind::stream: {
      sigpipe_ignored guard;
      // No O_TRUNC or O_CREAT: the thing exists and is written as it is.
      const int fd = open_stream(r.path, keep_waiting);
      try {
        write_all(fd, text, keep_waiting);
      } catch (...) {
        ::close(fd);
        throw;
      }
      if (::close(fd) != 0) throw file_problem(reason(errno));
      return;
    }
  }
}

// ---- caches -----------------------------------------------------------------

namespace {

// One line per cache path and process: a cache read by every point must not
// repeat itself.
void say_once(const fs::path& path, const std::string& what) {
  static std::mutex m;
  static std::set<std::string> said;
  const std::lock_guard lock(m);
  if (!said.insert(path.string()).second) return;
  fmt::print(stderr, "xfer: cache {} {}\n", path.string(), what);
}

std::string what_it_is(mode_t mode) {
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISBLK(mode)) return "a block device";
  return "not a regular file";
}

}  // namespace

bool cache_turned_off(std::string_view setting) {
  if (setting == "off") return true;
  if (setting.empty()) return false;
  struct stat st {}, null {};
  return ::stat(std::string(setting).c_str(), &st) == 0 && ::stat("/dev/null", &null) == 0 && S_ISCHR(st.st_mode) &&
         st.st_rdev == null.st_rdev;
}

std::string read_regular_file(const fs::path& path, std::size_t max_bytes) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) throw file_problem(reason(errno));
  if (!S_ISREG(st.st_mode)) throw file_problem(fmt::format("it is {}, not a regular file", what_it_is(st.st_mode)));
  // Without waiting, and checked again once open: it may have been swapped since.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
  if (fd < 0) throw file_problem(reason(errno));
  std::string text;
  try {
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) throw file_problem("it is not a regular file");
    if (static_cast<std::uint64_t>(st.st_size) > max_bytes)
      throw file_problem(fmt::format("it holds {} bytes, more than the {} read", st.st_size, max_bytes));
    // The size it has, and one byte more to see it grow: never the limit itself (a 1 GiB limit
    // must not cost a gigabyte a read).
    text.resize(static_cast<std::size_t>(st.st_size) + 1);
    std::size_t got = 0;
    while (got < text.size()) {
      const ssize_t n = ::read(fd, text.data() + got, text.size() - got);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) throw file_problem(reason(errno));
      if (n == 0) break;
      got += static_cast<std::size_t>(n);
    }
    if (got > static_cast<std::size_t>(st.st_size)) throw file_problem("it grew while it was read");
    text.resize(got);
  } catch (...) {
    ::close(fd);
    throw;
  }
  ::close(fd);
  return text;
}

std::optional<std::string> read_cache(const fs::path& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return std::nullopt;  // not there yet (or not ours to see)
  try {
    return read_regular_file(path, max_cache_bytes);
  } catch (const file_problem& e) {
    say_once(path, fmt::format("ignored: {}", e.what()));
    return std::nullopt;
  }
}

void write_cache(const fs::path& path, std::string_view text) {
  try {
    const file_target t = resolve_file_target(path);
    if (t.kind != file_target_kind::replace) {
      struct stat st {};
      const std::string what = ::stat(path.c_str(), &st) == 0 ? what_it_is(st.st_mode) : "not a regular file";
      throw file_problem(fmt::format("it is {}, which a cache never replaces", what));
    }
    // A file too large to be a cache is not ours: left as it is.
    if (struct stat st {}; t.identity && ::stat(t.path.c_str(), &st) == 0 &&
                           static_cast<std::uint64_t>(st.st_size) > max_cache_bytes)
      throw file_problem(fmt::format("it holds {} bytes, more than a cache's {}", st.st_size, max_cache_bytes));
    std::error_code ec;
    if (t.path.has_parent_path()) fs::create_directories(t.path.parent_path(), ec);
    write_file_target(t, text);
  } catch (const std::exception& e) {  // file_problem, or the directory's creation
    say_once(path, fmt::format("not written: {}", e.what()));
  }
}

}  // namespace xfer::mem
