#pragma once
// A result file's entry as plain data: null, a boolean, a number, a string,
// an array, or an object whose keys keep the order they were added in. This is
// what studies hand the reporters (core/study.hpp), so no JSON library's type
// appears in a public header; the JSON reporter converts it in src/core.
//
//   value v = value::object{{"strategy", "aligned"}, {"bytes", 4096}};
//   v["samples_s"] = std::vector<double>{1e-6, 2e-6};
#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

namespace xfer {

class value {
 public:
  using array = std::vector<value>;
  using object = std::vector<std::pair<std::string, value>>;
  using storage = std::variant<std::nullptr_t, bool, std::int64_t, std::uint64_t, double, std::string, array, object>;

  value() noexcept : data_(nullptr) {}
  value(std::nullptr_t) noexcept : data_(nullptr) {}
  value(bool b) noexcept : data_(b) {}
  // Signed integers stay signed and unsigned ones unsigned, so a byte count
  // above 2^63 is written exactly.
  template <class T>
    requires(std::is_integral_v<T> && !std::is_same_v<T, bool> && !std::is_same_v<T, char>)
  value(T n) noexcept {
    if constexpr (std::is_signed_v<T>)
      data_ = static_cast<std::int64_t>(n);
    else
      data_ = static_cast<std::uint64_t>(n);
  }
  value(double d) noexcept : data_(d) {}
  value(const char* s) : data_(std::string(s)) {}
  value(std::string s) : data_(std::move(s)) {}
  value(std::string_view s) : data_(std::string(s)) {}
  value(array a) : data_(std::move(a)) {}
  value(object o) : data_(std::move(o)) {}
  template <class T>
    requires(!std::is_same_v<T, value> && std::is_constructible_v<value, const T&>)
  value(const std::vector<T>& v) : data_(array(v.begin(), v.end())) {}

  const storage& data() const { return data_; }
  bool is_null() const { return std::holds_alternative<std::nullptr_t>(data_); }
  bool is_object() const { return std::holds_alternative<object>(data_); }
  bool is_array() const { return std::holds_alternative<array>(data_); }

  // The member named `key`, added as null when absent; a null value becomes an
  // empty object first. Throws std::logic_error on any other kind of value.
  value& operator[](std::string_view key);
  // The member named `key`; nullptr when absent or this is not an object.
  const value* find(std::string_view key) const;
  // Appends to an array; a null value becomes an empty array first. Throws
  // std::logic_error on any other kind of value.
  void push_back(value v);

  // The value as JSON text (indent < 0: one line), for tests and messages.
  std::string dump(int indent = -1) const;

 private:
  storage data_;
};

}  // namespace xfer
