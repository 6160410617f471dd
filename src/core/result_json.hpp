#pragma once
// The result model's JSON form (schema "xferbench/result/v2", see
// docs/result-schema.md), for nlohmann::json's to_json/from_json lookup: kept
// out of the public headers, so no JSON library's type appears there.
#include <nlohmann/json.hpp>
#include <xfer/core/result.hpp>

namespace xfer {

// Every field under its own name: the library writes both directions.
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(summary, min, median, mean, p95, max, stddev, count)
void to_json(nlohmann::json& j, const point_result& r);
void from_json(const nlohmann::json& j, point_result& r);
void to_json(nlohmann::json& j, const system_info& s);
void from_json(const nlohmann::json& j, system_info& s);

}  // namespace xfer
