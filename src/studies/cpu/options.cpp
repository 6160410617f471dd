#include <algorithm>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <xfer/core/errors.hpp>
#include <xfer/core/plan.hpp>
#include <xfer/core/size.hpp>
#include <xfer/cpu/options.hpp>
#include <xfer/mem/kinds.hpp>

namespace xfer::cpu {
namespace {

constexpr long long max_threads = 1024;
constexpr long long max_runs = 1000000;

template <class T>
void add_unique(std::vector<T>& v, const T& x) {
  if (std::find(v.begin(), v.end(), x) == v.end()) v.push_back(x);
}

}  // namespace

options::checked options::check(std::uint64_t memory_bytes) const {
  checked out;
  study_config& config = out.config;
  if (runs < 1 || runs > max_runs)
    throw usage_error(fmt::format("--runs {} is out of range: give 1 to {}", runs, max_runs));
  config.runs = static_cast<std::size_t>(runs);

  if (threads.empty()) throw usage_error("--threads needs at least one thread count");
  config.threads.clear();
  for (long long t : threads) {
    if (t < 1 || t > max_threads)
      throw usage_error(fmt::format("--threads {} is out of range: give 1 to {}", t, max_threads));
    add_unique(config.threads, static_cast<unsigned>(t));
  }

  if (!ops.empty()) {
    config.ops.clear();
    for (const auto& o : ops) add_unique(config.ops, parse_op(o));
  }
  if (!methods.empty()) {
    config.methods.clear();
    for (const auto& m : methods) add_unique(config.methods, parse_method(m));
  }
  bool any_pair = false;
  for (auto o : config.ops)
    for (auto m : config.methods) any_pair = any_pair || applies(o, m);
  if (!any_pair)
    throw usage_error("the selected methods apply to none of the selected ops (ntload applies only to read)");
  // An op no selected method applies to was left out without a word
  // (`--ops read,write --methods ntload` measured no write): named ops are a
  // usage error, the default ops a note.
  std::vector<std::string> left_out;
  for (auto o : config.ops)
    if (std::none_of(config.methods.begin(), config.methods.end(), [&](method m) { return applies(o, m); }))
      left_out.emplace_back(to_string(o));
  if (!left_out.empty()) {
    const auto what = fmt::format("none of --methods {} applies to {} (ntload applies only to read)",
                                  fmt::join(methods, ","), fmt::join(left_out, ", "));
    if (!ops.empty()) throw usage_error(fmt::format("--ops {}: {}", fmt::join(ops, ","), what));
    out.notes.push_back(what + ": not measured");
  }

  config.sizes = parse_size_list(sizes);
  check_sizes_fit(config.sizes, memory_bytes);
  std::sort(config.sizes.begin(), config.sizes.end());
  config.sizes.erase(std::unique(config.sizes.begin(), config.sizes.end()), config.sizes.end());

  for (const auto& k : kinds) {
    const std::string spelled = mem::canonical_kind_name(k);
    if (spelled != k) out.notes.push_back(fmt::format("memory kind '{}' is spelled '{}'", k, spelled));
    add_unique(out.kinds, spelled);
  }
  return out;
}

}  // namespace xfer::cpu
