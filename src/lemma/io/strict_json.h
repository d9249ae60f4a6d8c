// JSON parsing for untrusted file headers: nlohmann_json plus the checks it does not make
// (a duplicate key in any object, nesting deeper than `max_depth`). Errors are FormatError
// "<name>: ...".
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace lemma::io {

nlohmann::json parse_strict_json(std::string_view text, const std::string& name, int max_depth = 32);

}  // namespace lemma::io
