#include <xfer/core/settings_file.hpp>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <xfer/core/errors.hpp>
#include <xfer/mem/files.hpp>

namespace xfer {

namespace {
// A result file of a long sweep is a few MiB; anything much larger is not one.
constexpr std::size_t max_settings_file_bytes = std::size_t{256} << 20;
}  // namespace

std::vector<mem::setting> read_settings_file(const std::string& path) {
  using json = nlohmann::json;
  std::string text;
  try {
    text = mem::read_regular_file(path, max_settings_file_bytes);
  } catch (const mem::file_problem& e) {
    throw usage_error(fmt::format("--settings {}: cannot read it: {}", path, e.what()));
  }
  json doc;
  try {
    doc = json::parse(text);
  } catch (const json::exception&) {
    throw usage_error(fmt::format("--settings {}: not JSON (a result file or {{\"settings\": [...]}})", path));
  }
  const json* list = nullptr;
  if (doc.is_object() && doc.contains("config") && doc["config"].is_object() && doc["config"].contains("settings"))
    list = &doc["config"]["settings"];
  else if (doc.is_object() && doc.contains("settings"))
    list = &doc["settings"];
  if (!list || !list->is_array())
    throw usage_error(fmt::format("--settings {}: records no settings (written before xferbench recorded them?)", path));
  std::vector<mem::setting> out;
  for (const json& e : *list) {
    try {
      out.push_back({e.at("component").get<std::string>(), e.at("scope").get<std::string>(),
                     e.at("name").get<std::string>(), e.at("value").get<std::string>(),
                     mem::parse_setting_source(e.at("source").get<std::string>()), e.value("origin", "")});
    } catch (const std::exception&) {
      throw usage_error(fmt::format("--settings {}: entry {} is not a setting ({})", path, out.size() + 1, e.dump()));
    }
  }
  return out;
}

}  // namespace xfer
