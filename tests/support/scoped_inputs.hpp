#pragma once
// Tests steer libxfer as a program's front door does: through the inputs it
// installs (xfer/mem/settings.hpp), not the environment. Where the
// environment is the feature under test, scoped_env sets a variable and
// installs what the front door resolves from it.
#include <cstdlib>
#include <functional>
#include <optional>
#include <string>
#include <xfer/mem/settings.hpp>

namespace xfer::test {

// Installs the current inputs as `change` leaves them; the ones before on destruction.
class scoped_inputs {
 public:
  explicit scoped_inputs(const std::function<void(mem::library_inputs&)>& change) : before_(*mem::current_inputs()) {
    mem::library_inputs in = before_;
    change(in);
    mem::install_inputs(std::move(in));
  }
  ~scoped_inputs() { mem::install_inputs(before_); }
  scoped_inputs(const scoped_inputs&) = delete;
  scoped_inputs& operator=(const scoped_inputs&) = delete;

 private:
  mem::library_inputs before_;
};

// The staged copier's calibrated fields fixed, as CI's XFER_STAGED_* variables
// fix them (nothing is calibrated), each named by its variable.
inline scoped_inputs fixed_staged_tuning(const char* chunk, const char* depth, const char* threads,
                                         const char* handoff) {
  return scoped_inputs([&](mem::library_inputs& in) {
    in.staged = {{mem::staged_field::chunk_bytes, "XFER_STAGED_CHUNK_BYTES", chunk},
                 {mem::staged_field::ring_depth, "XFER_STAGED_RING_DEPTH", depth},
                 {mem::staged_field::threads, "XFER_STAGED_THREADS", threads},
                 {mem::staged_field::handoff_bytes, "XFER_STAGED_HANDOFF_BYTES", handoff}};
  });
}

// Sets (or, given nullptr, unsets) a variable, restoring it on destruction.
// Nothing is installed: call mem::inputs_from_environment() to see its effect.
class scoped_env {
 public:
  scoped_env(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    value ? ::setenv(name, value, 1) : ::unsetenv(name);
  }
  ~scoped_env() { old_ ? ::setenv(name_, old_->c_str(), 1) : ::unsetenv(name_); }
  scoped_env(const scoped_env&) = delete;
  scoped_env& operator=(const scoped_env&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

}  // namespace xfer::test
