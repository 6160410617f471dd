// The roofline bench's shared parts: statistics, the DRAM model, the
// machine's caches and memory-controller counters, designs (roofline.hpp).
#include "roofline.hpp"

#include <linux/perf_event.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <fmt/format.h>
#include <xfer/core/size.hpp>

namespace roofline {

namespace fs = std::filesystem;

rate summarize(double bytes, std::vector<double> seconds) {
  rate r;
  r.seconds = seconds;
  if (seconds.empty()) return r;
  std::sort(seconds.begin(), seconds.end());
  r.best_gbs = bytes / seconds.front() / 1e9;
  const std::size_t n = seconds.size();
  const double median = n % 2 ? seconds[n / 2] : (seconds[n / 2 - 1] + seconds[n / 2]) / 2;
  r.median_gbs = bytes / median / 1e9;
  return r;
}

nlohmann::json to_json(const rate& r) {
  return {{"best_gbs", r.best_gbs}, {"median_gbs", r.median_gbs}, {"seconds", r.seconds}};
}

dram_model staged_model(bool to_device, bool ring_fits_llc, bool stream_stores) {
  dram_model m;
  // Regular stores into a ring that stays cached never reach DRAM; streaming
  // stores always do (they bypass the cache), and then so does the device.
  const double staging = ring_fits_llc && !stream_stores ? 0 : 1;
  if (to_device) {
    m.source = 1;
    m.staging_write = staging;
    m.staging_rfo = stream_stores || ring_fits_llc ? 0 : 1;
    m.device = staging;
  } else {
    m.device = ring_fits_llc ? 0 : 1;  // DDIO writes into the LLC
    m.cpu_read = m.device;
    m.destination = 1;
    m.destination_rfo = stream_stores ? 0 : 1;
  }
  return m;
}

nlohmann::json to_json(const dram_model& m) {
  return {{"source_read", m.source},   {"staging_write", m.staging_write}, {"staging_rfo", m.staging_rfo},
          {"device", m.device},        {"cpu_read_staging", m.cpu_read},  {"destination_write", m.destination},
          {"destination_rfo", m.destination_rfo}, {"total", m.total()}};
}

nlohmann::json bytes_per_byte(const dram_model& model, std::optional<double> counted_total) {
  if (counted_total) return {{"value", *counted_total}, {"source", "counted (uncore_imc cas_count)"}};
  return {{"value", model.total()}, {"source", "model, not a count"}, {"terms", to_json(model)}};
}

namespace {

// A sysfs attribute: one line ("" where the file is missing).
std::string read_line(const fs::path& p) {
  std::string s;
  if (std::ifstream in(p); !std::getline(in, s)) s.clear();
  return s;
}

}  // namespace

bool fits(std::size_t ring_bytes, std::size_t llc, double fraction) {
  return llc > 0 && static_cast<double>(ring_bytes) <= fraction * static_cast<double>(llc);
}

// ---- memory-controller counters ---------------------------------------------

namespace {

// An event's "event=0x04,umask=0x03" placed in perf_event_attr.config by the
// PMU's format files ("config:0-7"). Nullopt where a term lies elsewhere
// (config1) or a file is missing.
std::optional<std::uint64_t> event_config(const fs::path& pmu, const std::string& spec) {
  std::uint64_t config = 0;
  std::stringstream terms(spec);
  for (std::string term; std::getline(terms, term, ',');) {
    const auto eq = term.find('=');
    const std::string name = term.substr(0, eq);
    const std::uint64_t value = eq == std::string::npos ? 1 : std::stoull(term.substr(eq + 1), nullptr, 0);
    const std::string format = read_line(pmu / "format" / name);
    unsigned lo = 0;
    if (format.rfind("config:", 0) != 0 || std::sscanf(format.c_str() + 7, "%u", &lo) != 1) return std::nullopt;
    config |= value << lo;
  }
  return config;
}

}  // namespace

dram_counter::dram_counter() {
  std::error_code ec;
  std::vector<fs::path> pmus;
  for (const auto& e : fs::directory_iterator("/sys/bus/event_source/devices", ec))
    if (e.path().filename().string().rfind("uncore_imc", 0) == 0) pmus.push_back(e.path());
  if (pmus.empty()) {
    why_ = "no uncore_imc PMU in /sys/bus/event_source/devices (a VM, or not an Intel server)";
    return;
  }
  for (const auto& pmu : pmus) {
    const int type = std::atoi(read_line(pmu / "type").c_str());
    // One CPU per socket counts that socket's controllers.
    std::vector<int> cpus;
    std::stringstream mask(read_line(pmu / "cpumask"));
    for (std::string c; std::getline(mask, c, ',');) cpus.push_back(std::atoi(c.c_str()));
    if (cpus.empty()) cpus.push_back(0);
    for (const bool write : {false, true}) {
      const std::string event = write ? "cas_count_write" : "cas_count_read";
      const auto config = event_config(pmu, read_line(pmu / "events" / event));
      if (!config) {
        why_ = fmt::format("{} has no usable {} event", pmu.filename().string(), event);
        break;
      }
      double scale = std::atof(read_line(pmu / "events" / (event + ".scale")).c_str());
      if (scale <= 0) scale = 64;
      else if (read_line(pmu / "events" / (event + ".unit")) == "MiB") scale *= 1 << 20;
      for (const int cpu : cpus) {
        perf_event_attr attr{};
        attr.size = sizeof attr;
        attr.type = static_cast<std::uint32_t>(type);
        attr.config = *config;
        attr.disabled = 1;
        const long fd = ::syscall(SYS_perf_event_open, &attr, -1, cpu, -1, 0);
        if (fd < 0) {
          why_ = fmt::format("perf_event_open({} {}) failed: {} (perf_event_paranoid, or no permission)",
                             pmu.filename().string(), event, std::strerror(errno));
          break;
        }
        counters_.push_back({static_cast<int>(fd), scale, write});
      }
    }
    if (!why_.empty()) break;
  }
  if (!why_.empty()) {
    for (const auto& c : counters_) ::close(c.fd);
    counters_.clear();
  }
}

dram_counter::~dram_counter() {
  for (const auto& c : counters_) ::close(c.fd);
}

void dram_counter::start() {
  for (const auto& c : counters_) {
    ::ioctl(c.fd, PERF_EVENT_IOC_RESET, 0);
    ::ioctl(c.fd, PERF_EVENT_IOC_ENABLE, 0);
  }
}

std::pair<double, double> dram_counter::stop() {
  double read = 0, written = 0;
  for (const auto& c : counters_) {
    ::ioctl(c.fd, PERF_EVENT_IOC_DISABLE, 0);
    std::uint64_t n = 0;
    if (::read(c.fd, &n, sizeof n) != static_cast<ssize_t>(sizeof n)) n = 0;
    (c.write ? written : read) += static_cast<double>(n) * c.bytes_per_count;
  }
  return {read, written};
}

// ---- designs -------------------------------------------------------------------

design parse_design(const std::string& text, unsigned default_threads) {
  design d;
  d.label = text;
  d.threads = default_threads;
  std::stringstream parts(text);
  std::vector<std::string> p;
  for (std::string s; std::getline(parts, s, '/');) p.push_back(s);
  if (p.size() < 2) throw std::invalid_argument(fmt::format("design '{}': expected chunk/ring[/threads][/nt][/size]", text));
  d.chunk = xfer::parse_size(p[0]);
  d.ring = static_cast<unsigned>(std::stoul(p[1]));
  for (std::size_t i = 2; i < p.size(); ++i) {
    if (p[i] == "nt") d.stream_stores = true;
    else if (p[i] == "size") d.size_chunks = true;
    else if (!p[i].empty() && p[i].find_first_not_of("0123456789") == std::string::npos)
      d.threads = static_cast<unsigned>(std::stoul(p[i]));
    else
      throw std::invalid_argument(fmt::format("design '{}': unknown part '{}' (a thread count, nt, size)", text, p[i]));
  }
  if (d.ring == 0 || d.threads == 0) throw std::invalid_argument(fmt::format("design '{}': ring and threads must be positive", text));
  return d;
}

}  // namespace roofline
