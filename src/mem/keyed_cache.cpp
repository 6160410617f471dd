#include "keyed_cache.hpp"

#include <sstream>
#include <vector>
#include <fmt/format.h>
#include <xfer/mem/files.hpp>
#include <xfer/mem/settings.hpp>

namespace xfer::mem {
namespace {

std::string header(const keyed_cache& c) { return fmt::format("xfer {} cache, schema {}", c.kind, c.schema); }

struct entry {
  std::string key, machine, fields;
};

// The file's entries; none, with `ours` false, where its first line is not
// this schema's header.
std::vector<entry> entries(const keyed_cache& c, bool& ours, bool& empty) {
  const std::string text = read_cache(c.file).value_or("");
  std::istringstream in(text);
  std::string line;
  empty = text.empty();
  ours = std::getline(in, line) && line == header(c);
  std::vector<entry> out;
  if (!ours) return out;
  while (std::getline(in, line)) {
    const auto a = line.find('\t');
    const auto b = a == std::string::npos ? a : line.find('\t', a + 1);
    if (b == std::string::npos) continue;  // damaged: dropped at the next write
    out.push_back({line.substr(0, a), line.substr(a + 1, b - a - 1), line.substr(b + 1)});
  }
  return out;
}

}  // namespace

std::optional<std::string> read_entry(const keyed_cache& c, const std::string& key, const std::string& machine) {
  if (c.file.empty()) return std::nullopt;
  bool ours = false, empty = true;
  const auto all = entries(c, ours, empty);
  if (!ours) {
    if (!empty)
      record_notice(fmt::format("{} cache {}: not this version's (its first line is not \"{}\"): ignored", c.kind,
                                c.file, header(c)));
    return std::nullopt;
  }
  const entry* found = nullptr;
  for (const entry& e : all)
    if (e.key == key) found = &e;
  if (!found) return std::nullopt;
  if (found->machine != machine) {
    record_notice(fmt::format("{} cache {}: the entry for {} was made on another machine ({}; this one: {}): ignored",
                              c.kind, c.file, key, found->machine, machine));
    return std::nullopt;
  }
  return found->fields;
}

void write_entry(const keyed_cache& c, const std::string& key, const std::string& machine,
                 const std::string& fields) {
  if (c.file.empty()) return;
  bool ours = false, empty = true;
  std::string text = header(c) + '\n';
  for (const entry& e : entries(c, ours, empty))
    if (e.key != key) text += fmt::format("{}\t{}\t{}\n", e.key, e.machine, e.fields);
  text += fmt::format("{}\t{}\t{}\n", key, machine, fields);
  write_cache(c.file, text);
}

void entry_unusable(const keyed_cache& c, const std::string& key, std::string_view why) {
  record_notice(fmt::format("{} cache {}: the entry for {} {}: ignored", c.kind, c.file, key, why));
}

}  // namespace xfer::mem
