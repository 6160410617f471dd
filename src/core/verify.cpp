// Verification once, for every backend: core poisons what a sample writes
// before it and checks it after, by the table of places (sample_check.hpp),
// the pattern (pattern.hpp) and what a transfer says about reaching its
// places (backend.hpp). A backend writes no poison/check logic of its own.
#include <algorithm>
#include <fmt/format.h>
#include <stdexcept>
#include <xfer/core/backend.hpp>
#include <xfer/core/errors.hpp>
#include <xfer/core/pattern.hpp>
#include <xfer/core/sample_check.hpp>

namespace xfer {
namespace {

[[noreturn]] void no_places(const char* what) {
  throw std::logic_error(fmt::format("transfer::{}: this transfer names no places to verify; it must override "
                                     "verify, poison_sample and check_sample",
                                     what));
}

void check_place(transfer& t, const sample_destination& d) {
  if (const auto m = t.find_mismatch(d)) throw_place_mismatch(d.what, t.place_bytes(), *m);
}

}  // namespace

void throw_place_mismatch(const char* what, std::uint64_t bytes, const place_mismatch& m) {
  throw verification_error(
      fmt::format("{}: byte {} of {} differs from what was sent (got 0x{:02x})", what, m.offset, bytes, m.got));
}

// A place that a whole repetition cannot poison (rw's read-back lands in its
// own source) is verified step by step instead: each step's place poisoned,
// the step run alone, its place checked, so a read-back that never ran cannot
// pass on the source it left there.
void transfer::verify() {
  const auto ps = places();
  if (std::all_of(ps.begin(), ps.end(), [](const sample_destination& d) { return d.poisoned; })) {
    poison_sample();
    run(1);
    check_sample();
    return;
  }
  for (std::size_t k = 0; k < ps.size(); ++k) {
    poison_place(ps[k]);
    run_step(k);
    check_place(*this, ps[k]);
  }
}

void transfer::poison_sample() {
  for (const auto& d : places())
    if (d.poisoned) poison_place(d);
}

void transfer::check_sample() {
  for (const auto& d : places()) check_place(*this, d);
}

std::span<const sample_destination> transfer::places() const { no_places("places"); }

std::uint64_t transfer::place_bytes() const { no_places("place_bytes"); }

void transfer::reach_place(const sample_destination&, place_access, const std::function<void(std::span<std::byte>)>&) {
  no_places("reach_place");
}

void transfer::poison_place(const sample_destination& d) {
  reach_place(d, place_access::overwrite, [](std::span<std::byte> s) { poison(s.data(), s.size()); });
}

std::optional<place_mismatch> transfer::find_mismatch(const sample_destination& d) {
  std::optional<place_mismatch> m;
  reach_place(d, place_access::read, [&](std::span<std::byte> s) {
    if (const auto at = find_pattern_mismatch(s.data(), s.size(), d.seed))
      m = place_mismatch{*at, static_cast<unsigned char>(s[*at])};
  });
  return m;
}

void transfer::run_step(std::size_t) {
  throw std::logic_error("transfer::run_step: this route cannot run one step of a repetition alone");
}

bool corrupt_place_for_testing(transfer& t, std::size_t which, std::uint64_t offset) {
  const auto ps = t.places();
  if (which >= ps.size()) return false;
  if (offset >= t.place_bytes()) throw std::out_of_range("corrupt_place_for_testing: offset past the place");
  t.reach_place(ps[which], place_access::update, [&](std::span<std::byte> s) { s[offset] ^= std::byte{0xff}; });
  return true;
}

}  // namespace xfer
