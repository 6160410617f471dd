#pragma once
// Counting this process's threads, for the tests that no thread is left over
// (or started beyond a team's size).
#include <dirent.h>

#include <chrono>
#include <thread>

namespace xfer::test {

// The threads this process has now (/proc/self/task has one entry per thread).
inline int thread_count() {
  int n = 0;
  if (DIR* d = ::opendir("/proc/self/task")) {
    while (dirent* e = ::readdir(d))
      if (e->d_name[0] != '.') ++n;
    ::closedir(d);
  }
  return n;
}

// A joined thread can stay listed in /proc/self/task for a moment while the
// kernel finishes its exit (the gate at 21246e0 counted one copier thread
// after the copier had joined it): the count is read until it is down to
// `want`, for up to 2 s; a thread that really outlives the copier stays.
inline int thread_count_down_to(int want) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  int n = thread_count();
  while (n > want && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    n = thread_count();
  }
  return n;
}

}  // namespace xfer::test
