// `xferbench trace -- CMD ARGS...`: runs a program with libxfer_cupti.so
// injected (CUDA_INJECTION64_PATH), then bills its transfers against this
// machine's curves (xfer/trace/). The program's output is its own; the bill
// goes to stderr after it and to the trace file.
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <fcntl.h>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <set>
#include <sys/wait.h>
#include <unistd.h>
#include <xfer/config.hpp>
#include <xfer/core/describe.hpp>
#include <xfer/core/errors.hpp>
#include <xfer/core/output_file.hpp>
#include <xfer/core/result.hpp>
#include <xfer/core/system_probe.hpp>
#include <xfer/trace/trace_file.hpp>

#include "commands.hpp"
#include "options.hpp"

namespace xfer::cli {

namespace {

namespace fs = std::filesystem;

// The shell's code for a command it cannot find or run.
constexpr int exit_not_found = 127;
// The short measurement of the sizes a program used, when no --machine file is given.
constexpr double measure_budget_s = 15;
// Size classes measured at most: the costliest groups' (each class is
// measured at its power of two and the next, so a size between is interpolated).
constexpr std::size_t max_measured_classes = 6;

struct trace_args {
  std::string output = "xferbench-trace.json";
  std::string machine;  // a sweep's result file
  std::string from;     // raw records captured earlier: by xferbench.trace() in Python, or kept with --keep
  std::string keep;     // where to leave the raw records (and the short measurement's sweep)
  bool quiet = false;
  std::vector<std::string> command;
};

fs::path self_exe() { return fs::read_symlink("/proc/self/exe"); }

// Next to the binary in a build tree; in lib/ or lib64/ beside bin/ where
// installed (python/xferbench/_trace.py looks in the same places).
fs::path injection_library() {
  const fs::path dir = self_exe().parent_path();
  for (const fs::path& p : {dir / "libxfer_cupti.so", dir.parent_path() / "lib" / "libxfer_cupti.so",
                            dir.parent_path() / "lib64" / "libxfer_cupti.so"})
    if (fs::exists(p)) return p;
  return {};
}

// The program as execvp would find it: a usage error (127) before anything runs.
void check_runnable(const std::string& name) {
  const auto runnable = [](const fs::path& p) { return ::access(p.c_str(), X_OK) == 0 && !fs::is_directory(p); };
  if (name.find('/') != std::string::npos) {
    if (!fs::exists(name)) throw std::invalid_argument(fmt::format("{}: no such file", name));
    if (!runnable(name)) throw std::invalid_argument(fmt::format("{}: not an executable file", name));
    return;
  }
  const char* path = std::getenv("PATH");
  std::string_view rest = path ? path : "/usr/bin:/bin";
  while (true) {
    const auto colon = rest.find(':');
    const std::string_view dir = rest.substr(0, colon);
    if (runnable(fs::path(dir.empty() ? "." : std::string(dir)) / name)) return;
    if (colon == std::string_view::npos) break;
    rest.remove_prefix(colon + 1);
  }
  throw std::invalid_argument(fmt::format("{}: command not found", name));
}

struct child_outcome {
  std::optional<int> exit_code, signal;
  double wall_s = 0;
};

// Runs the command with the injection set and waits. A stop signal sent to
// this process (not the terminal's, which reached the program already) is
// passed on, so the program ends as it would without the tracer.
child_outcome run_traced(const std::vector<std::string>& command, const fs::path& library, const fs::path& raw) {
  sigset_t stops;
  sigemptyset(&stops);
  for (int s : {SIGINT, SIGTERM, SIGHUP}) sigaddset(&stops, s);
  const auto t0 = std::chrono::steady_clock::now();
  const pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error(fmt::format("cannot start the program: {}", std::strerror(errno)));
  if (pid == 0) {
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);  // the tool holds them; the program must not
    std::signal(SIGPIPE, SIG_DFL);
    ::setenv("CUDA_INJECTION64_PATH", library.c_str(), 1);
    ::setenv("XFER_TRACE_DIR", raw.c_str(), 1);
    std::vector<char*> argv;
    for (const auto& a : command) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    ::execvp(argv[0], argv.data());
    std::fprintf(stderr, "xferbench: error: %s: %s\n", argv[0], std::strerror(errno));
    ::_exit(exit_not_found);
  }
  child_outcome out;
  int status = 0;
  while (true) {
    const pid_t r = ::waitpid(pid, &status, WNOHANG);
    if (r == pid) break;
    if (r < 0 && errno != EINTR) throw std::runtime_error(fmt::format("waiting for the program: {}", std::strerror(errno)));
    siginfo_t info{};
    const timespec tick{0, 20'000'000};
    if (::sigtimedwait(&stops, &info, &tick) > 0 && (info.si_code == SI_USER || info.si_code == SI_QUEUE))
      ::kill(pid, info.si_signo);
  }
  out.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (WIFEXITED(status)) out.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) out.signal = WTERMSIG(status);
  return out;
}

// The sizes the costliest host<->device groups moved, each class at its power
// of two and the next, so any size between is interpolated, never extrapolated.
std::vector<std::uint64_t> sizes_to_measure(const trace::bill& b, std::set<std::string>& directions) {
  std::set<std::uint64_t> sizes;
  std::set<std::uint64_t> classes;
  for (const auto& g : b.groups) {  // costliest first
    if (g.op != "memcpy" || (g.direction != "h2d" && g.direction != "d2h")) continue;
    directions.insert(g.direction);
    if (classes.size() >= max_measured_classes && !classes.count(g.size_class)) continue;
    classes.insert(g.size_class);
    for (const auto i : g.members) {
      const auto bytes = b.transfers[i].bytes;
      sizes.insert(trace::size_class_of(bytes));
      if (bytes != trace::size_class_of(bytes)) sizes.insert(trace::size_class_of(bytes) * 2);
    }
  }
  return {sizes.begin(), sizes.end()};
}

std::string signal_name(int sig) {
  const char* d = ::strsignal(sig);
  return fmt::format("signal {} ({})", sig, d ? d : "?");
}

fs::path temp_directory() {
  std::string dir = (fs::temp_directory_path() / "xferbench-trace-XXXXXX").string();
  if (!::mkdtemp(dir.data())) throw std::runtime_error(fmt::format("cannot make {}: {}", dir, std::strerror(errno)));
  return dir;
}

// The last line a file holds that is not empty: why a child failed.
std::string last_line(const fs::path& file) {
  std::ifstream in(file);
  std::string line, last;
  while (std::getline(in, line))
    if (!line.empty()) last = line;
  return last;
}

// This machine's curves at the sizes the program used: a short sweep by this
// same binary, its result file read back and its path recorded.
trace::machine_curves measure_curves(const trace::bill& b, unsigned device, const fs::path& raw, bool quiet) {
  trace::machine_curves none;
  std::set<std::string> directions;
  const auto sizes = sizes_to_measure(b, directions);
  if (sizes.empty()) {
    none.text = "nothing to price: no copy between host and device memory";
    return none;
  }
  std::vector<std::string> size_words;
  for (auto s : sizes) size_words.push_back(std::to_string(s));
  const fs::path out = raw / "machine.json";
  const fs::path log = raw / "machine.log";  // the sweep's console: its reason where it fails
  const std::vector<std::string> argv{self_exe().string(), "sweep", "-b", "cuda-rt", "--device", std::to_string(device),
                                      "-r", "copy-sync,copy-async,staged", "-m", "pageable,pinned", "-d",
                                      fmt::format("{}", fmt::join(directions, ",")), "--sizes",
                                      fmt::format("{}", fmt::join(size_words, ",")), "--budget",
                                      fmt::format("{:g}", measure_budget_s), "--json", out.string(), "-q", "--brief"};
  if (!quiet)
    fmt::print(stderr, "xferbench: trace: measuring this machine at the {} sizes seen (at most {:g} s)\n", sizes.size(),
               measure_budget_s);
  const pid_t pid = ::fork();
  if (pid == 0) {
    if (int fd = ::open("/dev/null", O_WRONLY); fd >= 0) ::dup2(fd, 1);
    if (int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644); fd >= 0) ::dup2(fd, 2);
    std::vector<char*> v;
    for (const auto& a : argv) v.push_back(const_cast<char*>(a.c_str()));
    v.push_back(nullptr);
    ::execv(v[0], v.data());
    ::_exit(exit_not_found);
  }
  int status = 0;
  while (pid > 0 && ::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (pid < 0 || !WIFEXITED(status) || !fs::exists(out)) {
    const std::string why = last_line(log);
    none.text = fmt::format("the short measurement (xferbench sweep) {}{}",
                            pid < 0                ? "could not start"
                            : WIFEXITED(status)    ? fmt::format("exited {}", WEXITSTATUS(status))
                                                   : fmt::format("was ended by {}", signal_name(WTERMSIG(status))),
                            why.empty() ? "" : ": " + why);
    return none;
  }
  auto m = trace::curves_from_sweep(out, device);
  m.source = "measured";
  m.path.clear();
  m.text = fmt::format("measured here: cuda-rt copy-sync, copy-async and staged, {} at {} sizes ({} curves){}",
                       fmt::join(directions, " and "), sizes.size(), m.curves.size(),
                       WEXITSTATUS(status) == 0 ? "" : fmt::format(", the sweep exiting {}", WEXITSTATUS(status)));
  return m;
}

int run_trace(const trace_args& a, const std::vector<std::string>& argv) {
  if (a.from.empty() == a.command.empty())
    throw usage_error(a.from.empty() ? "give the program to trace after --: xferbench trace -- python train.py"
                                     : "--from reads records already captured: give it or a command, not both");
  check_outputs({{"-o", a.output}});
  if (!a.keep.empty() && !a.from.empty()) throw usage_error("--keep keeps what a traced command captures: not with --from");
  if (!a.keep.empty()) {
    std::error_code ec;
    const fs::path parent = fs::absolute(a.keep).parent_path();
    if (fs::exists(a.keep, ec)) throw usage_error(fmt::format("--keep {}: it exists (give a new directory)", a.keep));
    if (!fs::is_directory(parent, ec))
      throw usage_error(fmt::format("--keep {}: {} is not a directory", a.keep, parent.string()));
  }
  trace::machine_curves given;
  if (!a.machine.empty()) {
    try {
      given = trace::curves_from_sweep(a.machine, 0);
    } catch (const std::invalid_argument& e) {
      throw usage_error(fmt::format("--machine {}", e.what()));
    }
  }

  trace::program_run run;
  run.started_at = utc_now();
  std::optional<fs::path> made;  // the raw directory this run made, removed at the end
  fs::path raw;
  if (!a.command.empty()) {
    try {
      check_runnable(a.command.front());
    } catch (const std::invalid_argument& e) {
      fmt::print(stderr, "xferbench: error: {}\n", e.what());
      return exit_not_found;
    }
    if (const char* other = std::getenv("CUDA_INJECTION64_PATH"); other && *other)
      throw std::runtime_error(fmt::format("CUDA_INJECTION64_PATH is already set ({}): another profiler (nsys, ncu) "
                                           "holds CUPTI; run xferbench trace outside it",
                                           other));
    const fs::path library = injection_library();
    if (library.empty())
      throw std::runtime_error(fmt::format("libxfer_cupti.so is not beside {} (built only where the CUDA toolkit has "
                                           "CUPTI): tracing is unavailable",
                                           self_exe().string()));
    if (!a.keep.empty()) {
      std::error_code ec;
      if (!fs::create_directory(a.keep, ec))
        throw usage_error(fmt::format("--keep {}: cannot make it a new directory{}", a.keep,
                                      ec ? ": " + ec.message() : " (it exists)"));
      raw = a.keep;
    } else {
      raw = temp_directory();
      made = raw;
    }
    run.command = a.command;
    const auto c = run_traced(a.command, library, raw);
    run.exit_code = c.exit_code;
    run.signal = c.signal;
    run.wall_s = c.wall_s;
  } else {
    raw = a.from;
    if (!fs::is_directory(raw)) throw usage_error(fmt::format("--from {}: not a directory", a.from));
  }

  std::vector<trace::process_capture> processes;
  try {
    processes = trace::read_captures(raw);
  } catch (const trace::capture_error& e) {
    if (made) fs::remove_all(*made);
    throw std::runtime_error(e.what());
  }
  if (a.command.empty()) {  // in-process: the span the capture covered
    std::uint64_t first = 0, last = 0;
    for (const auto& p : processes) {
      if (!first || p.clock_ns < first) first = p.clock_ns;
      last = std::max({last, p.end_clock_ns, p.transfers.empty() ? 0 : p.transfers.back().end_ns});
    }
    run.wall_s = last > first ? static_cast<double>(last - first) * 1e-9 : 0.0;
    if (!processes.empty()) run.command = processes.front().argv;
  }

  std::string refused;
  for (const auto& p : processes)
    if (!p.error.empty()) refused = fmt::format("process {}: CUPTI refused: {}", p.pid, p.error);
  const bool all_complete = std::all_of(processes.begin(), processes.end(), [](const auto& p) { return p.complete; });
  const std::string ended = !a.from.empty() ? fmt::format("records read from {}", a.from)
                             : run.signal    ? fmt::format("the program was ended by {}", signal_name(*run.signal))
                                             : fmt::format("the program exited with {}", run.exit_code.value_or(-1));
  if (processes.empty()) {
    run.state = "no_cuda";
    run.text = ended + "; it used no CUDA (no process initialised it): nothing to trace";
  } else if (!refused.empty()) {
    run.state = "not_traced";
    run.text = fmt::format("{}; {}", ended, refused);
  } else if (run.signal || !all_complete) {
    run.state = "interrupted";
    run.text = ended + "; what was captured until then (to the last 100 ms) is here";
  } else {
    run.text = processes.size() == 1 ? ended : fmt::format("{}; {} processes traced", ended, processes.size());
  }

  // Priced once the bill knows the sizes: the curves may be measured for them.
  trace::bill b = trace::make_bill(processes, trace::machine_curves{}, run.wall_s);
  trace::machine_curves machine = given;
  if (a.machine.empty() && !b.transfers.empty()) {
    // The measurement's files go with the raw records this run made or keeps, never into --from's directory.
    const fs::path where = a.from.empty() ? raw : temp_directory();
    machine = measure_curves(b, b.transfers.front().device, where, a.quiet);
    if (!a.from.empty()) fs::remove_all(where);
  }
  else if (a.machine.empty()) machine.text = "nothing to price";
  else if (!b.transfers.empty() && b.transfers.front().device != 0)
    machine = trace::curves_from_sweep(a.machine, b.transfers.front().device);  // the device the program used
  if (!b.transfers.empty()) b = trace::make_bill(processes, machine, run.wall_s);

  const system_info sys = probe_system();
  write_output(a.output, trace::trace_json(run, processes, machine, b, system_json(sys), XFER_VERSION));
  if (made) fs::remove_all(*made);
  if (!a.quiet || !refused.empty()) fmt::print(stderr, "{}", trace::bill_text(run, machine, b));
  if (!a.quiet) fmt::print(stderr, "xferbench: trace: wrote {}\n", a.output);
  (void)argv;
  if (!refused.empty()) return exit_failure;
  if (run.signal) return 128 + *run.signal;
  return run.exit_code.value_or(exit_ok);
}

}  // namespace

command add_trace_command(CLI::App& app) {
  auto a = std::make_shared<trace_args>();
  auto* cmd = app.add_subcommand(
      "trace",
      "run a CUDA program and bill its transfers: each group's cost on this machine, and the fixes ranked by the time "
      "they save.\n  xferbench trace -- python train.py\n  xferbench trace -o bill.json --machine sweep.json -- ./app "
      "--steps 10");
  cmd->add_option("-o,--output", a->output, "the trace file to write (default: xferbench-trace.json)")
      ->check(not_empty());
  cmd->add_option("--machine", a->machine,
                  "price with this sweep's result file (`xferbench sweep --json FILE`) instead of measuring the sizes "
                  "the program used (at most 15 s)");
  cmd->add_option("--keep", a->keep,
                  "keep the raw records (cupti-PID.jsonl, one a process) and the short measurement's sweep in DIR, "
                  "a new directory; they are removed otherwise")
      ->check(not_empty());
  cmd->add_option("--from", a->from, "bill records already captured in DIR (what xferbench.trace() in Python does)");
  add_quiet_flag(*cmd, a->quiet);
  cmd->add_option("command", a->command, "the program and its arguments, after --");
  return {cmd, [a](const std::vector<std::string>& argv) { return run_trace(*a, argv); }};
}

}  // namespace xfer::cli
