#include "proc_memory.hpp"

#include <fstream>
#include <sstream>
#include <string>

namespace xfer::alloc_study {
namespace {

std::uint64_t kb_field(const std::filesystem::path& file, const std::string& key) {
  std::ifstream f(file);
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind(key + ":", 0) != 0) continue;
    std::istringstream in(line.substr(key.size() + 1));
    std::uint64_t kb = 0;
    in >> kb;
    return kb * 1024;
  }
  return 0;
}

}  // namespace

memory_snapshot read_memory(const std::filesystem::path& proc) {
  memory_snapshot s;
  s.rss_bytes = kb_field(proc / "self/status", "VmRSS");
  s.peak_rss_bytes = kb_field(proc / "self/status", "VmHWM");
  s.virtual_bytes = kb_field(proc / "self/status", "VmSize");
  s.committed_bytes = kb_field(proc / "meminfo", "Committed_AS");
  return s;
}

bool reset_peak_rss() {
  std::ofstream f("/proc/self/clear_refs");
  f << "5";
  f.flush();
  return static_cast<bool>(f);
}

}  // namespace xfer::alloc_study
