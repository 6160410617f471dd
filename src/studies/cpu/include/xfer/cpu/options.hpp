#pragma once
// `xferbench cpu`'s options as given, and the one check that turns them into
// the study's configuration: what any caller of the study, not only the CLI,
// must pass before anything is measured.
#include <cstdint>
#include <string>
#include <vector>
#include <xfer/cpu/cpu_study.hpp>

namespace xfer::cpu {

struct options {
  std::vector<std::string> kinds, ops, methods;  // empty: all
  std::string sizes = "32M";
  long long runs = 20;
  std::vector<long long> threads{1};  // signed, so "-1" gets our message rather than a wrap-around

  struct checked {
    study_config config;
    std::vector<std::string> kinds;  // in the sweep's spelling, each once
    std::vector<std::string> notes;  // a kind given in an old spelling: what it is called now
  };
  // Throws usage_error naming the bad value: runs and thread counts out of
  // range, an unknown op or method, methods that apply to none of the ops, a
  // size larger than `memory_bytes` (0: unknown). Sizes come out sorted, each once.
  checked check(std::uint64_t memory_bytes) const;
};

}  // namespace xfer::cpu
