#pragma once
// The CPU-side study through the session (core/study.hpp): the kinds it
// measures resolved on the backends, every point a record of the file's
// "results", each kind one of "kinds", each write-combining verdict one of
// "write_combining", and the table (cpu_report.hpp) on the console.
#include <string>
#include <vector>
#include <xfer/core/backend.hpp>
#include <xfer/core/study.hpp>
#include <xfer/cpu/cpu_study.hpp>

namespace xfer::cpu {

class cpu_study final : public study {
 public:
  // `kinds` in the sweep's spelling (empty: default_kind_names()); the
  // baseline is measured first whatever is asked. Throws usage_error for a
  // kind no backend here knows. `backends` must outlive the study: the
  // resolved kinds may refer to them.
  cpu_study(study_config config, const std::vector<std::string>& kinds, const std::vector<backend_entry>& backends);
  study_info info() const override;
  void run(study_context& context) override;

  // The backends that provide a measured kind (their versions belong in the file).
  std::vector<std::string> providers() const;

 private:
  study_config config_;
  std::vector<std::string> kinds_;
  std::vector<kind_slot> slots_;
};

}  // namespace xfer::cpu
