#pragma once
// The three ways a request can go wrong, which the CLI maps to exit codes.
#include <stdexcept>
#include <string>

namespace xfer {

// Bad input from the user (malformed size, unknown name, ...): exit 2.
struct usage_error : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

// A point this backend/device/kind cannot run; it is recorded as "skipped" with what().
struct skip_point : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The reason a check that throws skip_point gives, or "" when it passes: one
// rule serves prepare() (throw) and the plan (ask).
template <class Check>
std::string skip_reason_of(Check&& check) {
  try {
    check();
    return {};
  } catch (const skip_point& e) {
    return e.what();
  }
}

// What arrived is not what was sent.
struct verification_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

}  // namespace xfer
