#pragma once
// The caches' file format (issue 51): a first line naming what the file holds
// and its schema, then one line per key:
//   "xfer <kind> cache, schema <n>"
//   "<key>\t<machine>\t<fields>"
// where <machine> is the CPU's model and the device's driver as the writer saw
// them. A file of another schema (an older version's), an entry written on
// another machine or one that does not parse is not used, and a notice says
// which and why (record_notice, settings.hpp); the next write replaces it.
#include <optional>
#include <string>
#include <string_view>

namespace xfer::mem {

struct keyed_cache {
  std::string file;  // empty: no cache
  std::string_view kind;  // "staged-tuning", "block-ways"
  int schema;
};

// The fields of `key`'s entry (the last line for it wins), when the file is of
// this schema and the entry's machine is `machine`; otherwise none, with a
// notice for a file or entry that is there but cannot be used.
std::optional<std::string> read_entry(const keyed_cache& c, const std::string& key, const std::string& machine);
// Rewrites the file with `key`'s entry replaced (a file of another schema
// loses its lines), whole or not at all (write_cache).
void write_entry(const keyed_cache& c, const std::string& key, const std::string& machine,
                 const std::string& fields);
// A notice that `key`'s entry in the file does not parse (a caller's check).
void entry_unusable(const keyed_cache& c, const std::string& key, std::string_view why);

}  // namespace xfer::mem
