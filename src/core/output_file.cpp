#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <fmt/format.h>
#include <iostream>
#include <optional>
#include <stdexcept>
#include <sys/stat.h>
#include <unistd.h>
#include <xfer/core/errors.hpp>
#include <xfer/core/output_file.hpp>

namespace xfer {
namespace {

namespace fs = std::filesystem;

// Why an output cannot be written. Before a run it becomes a usage error,
// after it a runtime error: the same finding, a different culprit.
struct output_problem {
  std::string why;
};

std::string reason(int err) { return std::strerror(err); }

enum class output_kind { replace, stream, standard_output };

struct resolved_output {
  output_kind kind = output_kind::replace;
  fs::path path;  // replace: the file renamed over (links followed); stream: what is opened
  std::optional<std::pair<dev_t, ino_t>> identity;  // for an output that exists
  mode_t mode = 0666;  // an existing file's permissions, kept across the replacement
  // An existing file's owner, kept across the replacement, and its hard links: a file with
  // several is written in place, since a rename would cut it from its other names.
  std::optional<std::pair<uid_t, gid_t>> owner;
  bool linked = false;
};

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
    if (ec) throw output_problem{ec.message()};
    p = target.is_absolute() ? target : p.parent_path() / target;
  }
  throw output_problem{reason(ELOOP)};
}

resolved_output resolve(const fs::path& path) {
  resolved_output r;
  if (path.empty()) throw output_problem{"the file name is empty (give a path, or - for standard output)"};
  const auto out = stdout_identity();
  if (path == "-") {
    r.kind = output_kind::standard_output;
    r.identity = out;
    return r;
  }
  // stat() first: the kernel follows /dev/stdout -> /proc/self/fd/1 ->
  // "pipe:[123]", which no path arithmetic could.
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) {
    r.identity = std::make_pair(st.st_dev, st.st_ino);
    if (r.identity == out) {
      r.kind = output_kind::standard_output;
      return r;
    }
    if (S_ISDIR(st.st_mode)) throw output_problem{"it is a directory"};
    if (S_ISBLK(st.st_mode)) throw output_problem{"it is a block device (a result is never written over a disk)"};
    if (S_ISREG(st.st_mode)) {
      // A rename would replace even a write-protected file; honour the
      // protection as `>` would.
      if (::access(path.c_str(), W_OK) != 0) throw output_problem{reason(errno)};
      std::error_code ec;
      r.path = fs::canonical(path, ec);
      if (ec) throw output_problem{ec.message()};
      r.mode = st.st_mode & 07777;
      r.owner = std::make_pair(st.st_uid, st.st_gid);
      r.linked = st.st_nlink > 1;
      return r;
    }
    r.kind = output_kind::stream;
    r.path = path;
    return r;
  }
  if (errno != ENOENT) throw output_problem{reason(errno)};
  r.path = follow_links(path);
  return r;
}

std::string display(const fs::path& path) { return path == "-" ? "standard output" : path.string(); }

// Same file: the same inode where both exist, else the same path with links
// and "." / ".." resolved ("r.json" and "./r.json"). Standard output is one
// file however it is named.
bool same_file(const resolved_output& a, const resolved_output& b) {
  if (a.identity && b.identity) return *a.identity == *b.identity;
  if (a.kind == output_kind::standard_output || b.kind == output_kind::standard_output)
    return a.kind == b.kind;
  if (a.identity || b.identity) return false;
  std::error_code ea, eb;
  const auto ca = fs::weakly_canonical(fs::absolute(a.path), ea), cb = fs::weakly_canonical(fs::absolute(b.path), eb);
  return !ea && !eb && ca == cb;
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
void write_all(int fd, std::string_view text) {
  while (!text.empty()) {
    const ssize_t n = ::write(fd, text.data(), text.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      throw output_problem{reason(errno)};
    }
    text.remove_prefix(static_cast<std::size_t>(n));
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
    if (errno != EEXIST || attempt >= 100) throw output_problem{reason(errno)};
  }
}

// In place, not atomic: for a file a rename would change (its other hard links, an owner we
// cannot give a new file). Its space is reserved first, so a full disk fails before the old
// content is touched.
void write_in_place(const fs::path& path, std::string_view text) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) throw output_problem{reason(errno)};
  try {
    const int rc = ::posix_fallocate(fd, 0, static_cast<off_t>(std::max<std::size_t>(text.size(), 1)));
    if (rc != 0 && rc != EOPNOTSUPP && rc != EINVAL && rc != ENODEV) throw output_problem{reason(rc)};
    write_all(fd, text);
    if (::ftruncate(fd, static_cast<off_t>(text.size())) != 0 || ::fsync(fd) != 0) throw output_problem{reason(errno)};
  } catch (...) {
    ::close(fd);
    throw;
  }
  if (::close(fd) != 0) throw output_problem{reason(errno)};
}

// Whole or not at all. False, with nothing changed, when the existing file's owner cannot be
// given to the new one (another user's file we may write through its group): the caller then
// writes in place.
bool replace(const resolved_output& r, std::string_view text) {
  fs::path tmp;
  const int fd = create_temporary(r.path, tmp);
  try {
    try {
      if (r.owner && *r.owner != std::make_pair(::geteuid(), ::getegid()) &&
          ::fchown(fd, r.owner->first, r.owner->second) != 0) {
        if (errno != EPERM) throw output_problem{reason(errno)};
        ::close(fd);
        ::unlink(tmp.c_str());
        return false;
      }
      // After the chown, which clears set-id bits.
      if (r.identity && ::fchmod(fd, r.mode) != 0) throw output_problem{reason(errno)};
      write_all(fd, text);
      // Synced before the rename: otherwise a crash just after it can leave
      // the new name on an empty file.
      if (::fsync(fd) != 0) throw output_problem{reason(errno)};
    } catch (...) {
      ::close(fd);
      throw;
    }
    if (::close(fd) != 0) throw output_problem{reason(errno)};
    if (::rename(tmp.c_str(), r.path.c_str()) != 0) throw output_problem{reason(errno)};
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
    if (rc != 0 && err != EINVAL) throw output_problem{reason(err)};
  }
  return true;
}

void check_one(const resolved_output& r) {
  switch (r.kind) {
    case output_kind::standard_output:
      return;
    case output_kind::stream:
      if (::access(r.path.c_str(), W_OK) != 0) throw output_problem{reason(errno)};
      return;
    case output_kind::replace: {
      // Proven by doing: create (and remove) a file where the result will go.
      fs::path tmp;
      const int fd = create_temporary(r.path, tmp);
      ::close(fd);
      ::unlink(tmp.c_str());
      return;
    }
  }
}

}  // namespace

void check_outputs(const std::vector<named_output>& outputs) {
  std::vector<std::pair<const named_output*, resolved_output>> seen;
  for (const auto& o : outputs) {
    if (o.path.empty()) continue;
    const auto prefix = o.option.empty() ? std::string() : o.option + ": ";
    try {
      auto r = resolve(o.path);
      check_one(r);
      for (const auto& [other, rs] : seen)
        if (same_file(r, rs))
          throw usage_error(fmt::format("{} and {} name the same file ({} and {}): the second would overwrite the first",
                                        other->option, o.option, display(other->path), display(o.path)));
      seen.emplace_back(&o, std::move(r));
    } catch (const output_problem& p) {
      throw usage_error(fmt::format("{}cannot write output file {}: {}", prefix, display(o.path), p.why));
    }
  }
}

void check_writable(const std::filesystem::path& path) {
  if (path.empty()) throw usage_error("cannot write output file: the file name is empty");
  check_outputs({{"", path.string()}});
}

bool writes_to_stdout(const std::filesystem::path& path) {
  try {
    return resolve(path).kind == output_kind::standard_output;
  } catch (const output_problem&) {
    return false;
  }
}

void write_output(const std::filesystem::path& path, std::string_view text) {
  try {
    const auto r = resolve(path);
    switch (r.kind) {
      case output_kind::replace:
        if (r.linked || !replace(r, text)) write_in_place(r.path, text);
        return;
      case output_kind::standard_output: {
        // Whatever stdio still holds goes first, so the order is the order written.
        if (std::fflush(stdout) != 0) throw output_problem{reason(errno)};
        sigpipe_ignored guard;
        write_all(STDOUT_FILENO, text);
        return;
      }
      case output_kind::stream: {
        sigpipe_ignored guard;
        // No O_TRUNC or O_CREAT: the thing exists and is written as it is.
        const int fd = ::open(r.path.c_str(), O_WRONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0) throw output_problem{reason(errno)};
        try {
          write_all(fd, text);
        } catch (...) {
          ::close(fd);
          throw;
        }
        if (::close(fd) != 0) throw output_problem{reason(errno)};
        return;
      }
    }
  } catch (const output_problem& p) {
    throw std::runtime_error(fmt::format("cannot write {}: {}", display(path), p.why));
  }
}

void close_stdout() {
  // stdio first: the first failing flush is the one whose errno says why.
  errno = 0;
  const bool flushed = std::fflush(stdout) == 0;
  const int err = errno;
  std::cout.flush();
  if (!flushed || std::ferror(stdout) || std::cout.bad()) {
    throw std::runtime_error(
        fmt::format("cannot write standard output: {}", err ? reason(err) : std::string("an earlier write failed")));
  }
  // Some file systems (NFS) report a failed write only when a descriptor is
  // closed. Closing a duplicate asks the same question and leaves stdout
  // usable for whatever still runs at exit.
  const int fd = ::dup(STDOUT_FILENO);
  if (fd >= 0 && ::close(fd) != 0 && errno != EINTR)
    throw std::runtime_error(fmt::format("cannot write standard output: {}", reason(errno)));
}

}  // namespace xfer
