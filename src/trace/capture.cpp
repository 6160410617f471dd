#include <xfer/trace/capture.hpp>

#include <algorithm>
#include <fmt/format.h>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

namespace xfer::trace {

namespace {

using json = nlohmann::json;

struct api_call {
  std::string name;
  std::uint64_t start = 0, end = 0;
};

struct interval {
  std::uint64_t start, end;
};

// The kernel time inside [start, end) on one device: intervals sorted and
// merged first, so kernels running at once count once.
double overlap_s(const std::vector<interval>& merged, std::uint64_t start, std::uint64_t end) {
  std::uint64_t ns = 0;
  auto it = std::lower_bound(merged.begin(), merged.end(), start,
                             [](const interval& i, std::uint64_t t) { return i.end <= t; });
  for (; it != merged.end() && it->start < end; ++it)
    ns += std::min(end, it->end) - std::max(start, it->start);
  return static_cast<double>(ns) * 1e-9;
}

std::vector<interval> merged(std::vector<interval> v) {
  std::sort(v.begin(), v.end(), [](const interval& a, const interval& b) { return a.start < b.start; });
  std::vector<interval> out;
  for (const auto& i : v) {
    if (!out.empty() && i.start <= out.back().end) out.back().end = std::max(out.back().end, i.end);
    else out.push_back(i);
  }
  return out;
}

std::string host_side(const std::string& direction, const std::string& src, const std::string& dst) {
  if (direction == "h2d" || direction == "h2h") return src;
  if (direction == "d2h") return dst;
  return "device";
}

}  // namespace

std::string call_name(std::string cupti_name) {
  // CUPTI names a call by its versioned entry point (cudaMemcpy_v3020,
  // cuMemcpyHtoD_v2); the program wrote cudaMemcpy, cuMemcpyHtoD.
  const auto v = cupti_name.rfind("_v");
  if (v != std::string::npos && v + 2 < cupti_name.size() &&
      std::all_of(cupti_name.begin() + static_cast<std::ptrdiff_t>(v) + 2, cupti_name.end(),
                  [](char ch) { return ch >= '0' && ch <= '9'; }))
    cupti_name.resize(v);
  return cupti_name;
}

process_capture read_capture(const std::filesystem::path& file) {
  std::ifstream in(file);
  if (!in) throw capture_error(fmt::format("{}: cannot read it", file.string()));
  process_capture p;
  std::map<std::uint32_t, api_call> runtime, driver;
  std::map<unsigned, std::vector<interval>> kernels;
  struct pending {
    transfer t;
    std::uint32_t corr, rcorr;
  };
  std::vector<pending> copies;
  std::string line;
  std::size_t number = 0;
  bool seen_process = false;
  while (std::getline(in, line)) {
    ++number;
    const bool last = in.peek() == std::char_traits<char>::eof();
    json r;
    try {
      r = json::parse(line);
      const std::string t = r.at("t").get<std::string>();
      if (t == "process") {
        p.pid = r.at("pid").get<int>();
        p.ppid = r.value("ppid", 0);
        p.argv = r.value("argv", std::vector<std::string>{});
        p.clock_ns = r.at("clock_ns").get<std::uint64_t>();
        seen_process = true;
      } else if (t == "copy" || t == "set") {
        pending c{};
        c.t.op = t == "copy" ? "memcpy" : "memset";
        c.t.direction = t == "copy" ? r.at("dir").get<std::string>() : "set";
        c.t.host_memory = t == "copy" ? host_side(c.t.direction, r.at("src").get<std::string>(), r.at("dst").get<std::string>())
                                      : r.at("mem").get<std::string>();
        c.t.bytes = r.at("bytes").get<std::uint64_t>();
        c.t.start_ns = r.at("start").get<std::uint64_t>();
        c.t.end_ns = r.at("end").get<std::uint64_t>();
        c.t.device = r.at("dev").get<unsigned>();
        c.t.stream = r.at("stream").get<unsigned>();
        c.t.async = r.at("async").get<int>() != 0;
        c.corr = r.at("corr").get<std::uint32_t>();
        c.rcorr = r.value("rcorr", std::uint32_t{0});
        copies.push_back(std::move(c));
      } else if (t == "kernel") {
        kernels[r.at("dev").get<unsigned>()].push_back({r.at("start").get<std::uint64_t>(), r.at("end").get<std::uint64_t>()});
      } else if (t == "api") {
        auto& to = r.at("domain").get<std::string>() == "runtime" ? runtime : driver;
        to[r.at("corr").get<std::uint32_t>()] = {call_name(r.at("name").get<std::string>()), r.at("start").get<std::uint64_t>(),
                                                 r.at("end").get<std::uint64_t>()};
      } else if (t == "error") {
        p.error = r.at("what").get<std::string>();
      } else if (t == "end") {
        p.dropped = r.value("dropped", std::uint64_t{0});
        p.end_clock_ns = r.value("clock_ns", std::uint64_t{0});
        p.complete = true;
      } else {
        throw capture_error(fmt::format("{} line {}: unknown record '{}'", file.string(), number, t));
      }
    } catch (const json::exception& e) {
      if (last) break;  // cut short by the process's end: what came before stands
      throw capture_error(fmt::format("{} line {}: not a capture record ({})", file.string(), number, e.what()));
    }
  }
  if (!seen_process) throw capture_error(fmt::format("{}: no process line (not written by libxfer_cupti)", file.string()));

  std::map<unsigned, std::vector<interval>> busy;
  for (auto& [dev, v] : kernels) busy[dev] = merged(std::move(v));
  for (auto& c : copies) {
    c.t.pid = p.pid;
    // The outermost call the program made: the runtime's when it went
    // through the runtime (its driver call is inside it), else the driver's.
    // CUPTI gives the copy the id of the call that launched it: the runtime
    // call's where there was one (runtimeCorrelationId then 0, as CUPTI 13
    // writes it), else the driver call's.
    const auto r = runtime.find(c.rcorr ? c.rcorr : c.corr);
    const auto d = driver.find(c.corr);
    const api_call* call = r != runtime.end() ? &r->second : d != driver.end() ? &d->second : nullptr;
    if (call) {
      c.t.call = call->name;
      c.t.host_s = static_cast<double>(call->end - call->start) * 1e-9;
    }
    if (const auto b = busy.find(c.t.device); b != busy.end()) c.t.overlap_s = overlap_s(b->second, c.t.start_ns, c.t.end_ns);
    p.transfers.push_back(std::move(c.t));
  }
  std::stable_sort(p.transfers.begin(), p.transfers.end(),
                   [](const transfer& a, const transfer& b) { return a.start_ns < b.start_ns; });
  return p;
}

std::vector<process_capture> read_captures(const std::filesystem::path& dir) {
  std::vector<process_capture> out;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    const auto name = e.path().filename().string();
    if (name.starts_with("cupti-") && name.ends_with(".jsonl")) out.push_back(read_capture(e.path()));
  }
  if (ec) throw capture_error(fmt::format("{}: cannot list it: {}", dir.string(), ec.message()));
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.pid < b.pid; });
  return out;
}

}  // namespace xfer::trace
