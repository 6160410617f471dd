#pragma once
// A run's settings read back (issue 51): `xferbench sweep --settings FILE`
// replays them. FILE is a result file (its config.settings) or a settings file
// ({"settings": [...]}, the same entries).
#include <string>
#include <vector>
#include <xfer/mem/settings.hpp>

namespace xfer {

// Throws usage_error (one line naming the file) for a file that cannot be
// read, is not JSON, or holds no settings list, or an entry of the wrong shape.
std::vector<mem::setting> read_settings_file(const std::string& path);

}  // namespace xfer
