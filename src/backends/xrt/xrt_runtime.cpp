#include "xrt_runtime.hpp"

#include <dlfcn.h>

#include <cstdlib>
#include <filesystem>
#include <fmt/format.h>
#include <xfer/mem/settings.hpp>
#include <mutex>
#include <system_error>

namespace xfer::xrt_backend {
namespace fs = std::filesystem;

std::string emulation_mode() {
  const char* m = std::getenv("XCL_EMULATION_MODE");
  return m ? m : "";
}

namespace {

// The directory libxrt_coreutil was loaded from (this binary links it).
fs::path coreutil_dir() {
  void* h = ::dlopen("libxrt_coreutil.so.2", RTLD_NOW | RTLD_NOLOAD);
  if (!h) return {};
  Dl_info info{};
  void* sym = ::dlsym(h, "xrtDeviceOpen");
  const bool ok = sym && ::dladdr(sym, &info) && info.dli_fname;
  ::dlclose(h);
  return ok ? fs::path(info.dli_fname).parent_path() : fs::path();
}

// The front door's cache directory (xfer/mem/settings.hpp), else the temporary one.
fs::path cache_root() {
  const std::string dir = mem::current_inputs()->cache_dir;
  return dir.empty() ? fs::temp_directory_path() / "xfer" : fs::path(dir);
}

std::string prepare_once() {
  if (const char* x = std::getenv("XILINX_XRT"); x && *x) return "";
  const fs::path libs = coreutil_dir();
  if (libs.empty()) return "XILINX_XRT is not set and libxrt_coreutil's directory could not be found";
  std::error_code ec;
  if (fs::exists(libs.parent_path() / "lib" / "libxrt_coreutil.so.2", ec) && libs.filename() == "lib") {
    ::setenv("XILINX_XRT", libs.parent_path().c_str(), 0);  // already the layout XRT expects
    return "";
  }
  const fs::path root = cache_root() / "xrt-root";
  fs::create_directories(root, ec);
  const fs::path link = root / "lib";
  if (fs::is_symlink(link, ec) && fs::read_symlink(link, ec) != libs) fs::remove(link, ec);
  if (!fs::exists(link, ec)) fs::create_directory_symlink(libs, link, ec);
  if (ec || fs::read_symlink(link, ec) != libs)
    return fmt::format("XILINX_XRT is not set and {} could not point at {} (set XILINX_XRT to a directory whose lib/ "
                       "holds XRT's shims)",
                       link.string(), libs.string());
  ::setenv("XILINX_XRT", root.c_str(), 0);
  return "";
}

}  // namespace

std::string prepare_environment() {
  static std::once_flag once;
  static std::string why;
  std::call_once(once, [] { why = prepare_once(); });
  return why;
}

}  // namespace xfer::xrt_backend
