#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fmt/format.h>
#include <iostream>
#include <stdexcept>
#include <unistd.h>
#include <xfer/core/errors.hpp>
#include <xfer/core/interrupt.hpp>
#include <xfer/core/output_file.hpp>
#include <xfer/mem/files.hpp>

namespace xfer {
namespace {

using mem::file_problem;

std::string display(const std::filesystem::path& path) { return path == "-" ? "standard output" : path.string(); }

}  // namespace

void check_outputs(const std::vector<named_output>& outputs) {
  std::vector<std::pair<const named_output*, mem::file_target>> seen;
  for (const auto& o : outputs) {
    if (o.path.empty()) continue;
    const auto prefix = o.option.empty() ? std::string() : o.option + ": ";
    try {
      auto r = mem::resolve_file_target(o.path);
      mem::check_file_target(r);
      for (const auto& [other, rs] : seen)
        if (mem::same_file_target(r, rs))
          throw usage_error(fmt::format("{} and {} name the same file ({} and {}): the second would overwrite the first",
                                        other->option, o.option, display(other->path), display(o.path)));
      seen.emplace_back(&o, std::move(r));
    } catch (const file_problem& p) {
      throw usage_error(fmt::format("{}cannot write output file {}: {}", prefix, display(o.path), p.what()));
    }
  }
}

void check_writable(const std::filesystem::path& path) {
  if (path.empty()) throw usage_error("cannot write output file: the file name is empty");
  check_outputs({{"", path.string()}});
}

bool writes_to_stdout(const std::filesystem::path& path) {
  try {
    return mem::resolve_file_target(path).kind == mem::file_target_kind::standard_output;
  } catch (const file_problem&) {
    return false;
  }
}

void write_output(const std::filesystem::path& path, std::string_view text) {
  // A FIFO nobody reads waits for its reader until the next stop signal (the
  // one that stopped the run, if any, does not count: its points are still written).
  const int signals_before = stop_signals_seen();
  try {
    mem::write_file_target(mem::resolve_file_target(path), text,
                           [signals_before] { return stop_signals_seen() == signals_before; });
  } catch (const file_problem& p) {
    throw std::runtime_error(fmt::format("cannot write {}: {}", display(path), p.what()));
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
        fmt::format("cannot write standard output: {}", err ? std::string(std::strerror(err)) : std::string("an earlier write failed")));
  }
  // Some file systems (NFS) report a failed write only when a descriptor is
  // closed. Closing a duplicate asks the same question and leaves stdout
  // usable for whatever still runs at exit.
  const int fd = ::dup(STDOUT_FILENO);
  if (fd >= 0 && ::close(fd) != 0 && errno != EINTR)
    throw std::runtime_error(fmt::format("cannot write standard output: {}", std::string(std::strerror(errno))));
}

}  // namespace xfer
