#include <cmath>
#include <stdexcept>
#include <string>

#include "value_json.hpp"

namespace xfer {

value& value::operator[](std::string_view key) {
  if (is_null()) data_ = object{};
  auto* o = std::get_if<object>(&data_);
  if (!o) throw std::logic_error("value: a member '" + std::string(key) + "' asked of a value that is not an object");
  for (auto& [k, v] : *o)
    if (k == key) return v;
  o->emplace_back(std::string(key), value{});
  return o->back().second;
}

const value* value::find(std::string_view key) const {
  const auto* o = std::get_if<object>(&data_);
  if (!o) return nullptr;
  for (const auto& [k, v] : *o)
    if (k == key) return &v;
  return nullptr;
}

void value::push_back(value v) {
  if (is_null()) data_ = array{};
  auto* a = std::get_if<array>(&data_);
  if (!a) throw std::logic_error("value: push_back on a value that is not an array");
  a->push_back(std::move(v));
}

std::string value::dump(int indent) const { return detail::to_nlohmann(*this).dump(indent); }

namespace detail {

nlohmann::json to_nlohmann(const value& v) {
  return std::visit(
      [](const auto& x) -> nlohmann::json {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, value::array>) {
          nlohmann::json a = nlohmann::json::array();
          for (const auto& e : x) a.push_back(to_nlohmann(e));
          return a;
        } else if constexpr (std::is_same_v<T, value::object>) {
          nlohmann::json o = nlohmann::json::object();
          for (const auto& [k, e] : x) o[k] = to_nlohmann(e);
          return o;
        } else if constexpr (std::is_same_v<T, double>) {
          // JSON has no NaN or infinity: written as null, as the sweep's ci_rel is.
          return std::isfinite(x) ? nlohmann::json(x) : nlohmann::json(nullptr);
        } else {
          return nlohmann::json(x);
        }
      },
      v.data());
}

}  // namespace detail
}  // namespace xfer
