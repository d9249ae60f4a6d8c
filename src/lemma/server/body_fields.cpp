#include "lemma/server/body_fields.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "lemma/server/api_error.h"

namespace lemma::server {

using nlohmann::json;

bool has_field(const json& body, const std::string& key) { return body.contains(key) && !body.at(key).is_null(); }

void only_fields(const json& body, std::initializer_list<std::string_view> known, const std::string& prefix) {
  for (const auto& [key, value] : body.items()) {
    if (std::find(known.begin(), known.end(), key) == known.end())
      fail_field(prefix + key, "is not a field lemma knows on this endpoint");
  }
}

double number_field(const json& body, const std::string& key, double lo, double hi) {
  const json& v = body.at(key);
  if (!v.is_number()) fail_field(key, "must be a number");
  const double x = v.get<double>();
  if (!std::isfinite(x) || x < lo || x > hi) fail_field(key, fmt::format("{} is outside [{}, {}]", v.dump(), lo, hi));
  return x;
}

int64_t integer_field(const json& body, const std::string& key, int64_t lo, int64_t hi) {
  const json& v = body.at(key);
  if (!v.is_number_integer()) fail_field(key, "must be an integer");
  if (v.is_number_unsigned() && v.get<uint64_t>() > uint64_t(std::numeric_limits<int64_t>::max()))
    fail_field(key, fmt::format("{} is outside [{}, {}]", v.dump(), lo, hi));
  const int64_t x = v.get<int64_t>();
  if (x < lo || x > hi) fail_field(key, fmt::format("{} is outside [{}, {}]", x, lo, hi));
  return x;
}

bool bool_field(const json& body, const std::string& key) {
  const json& v = body.at(key);
  if (!v.is_boolean()) fail_field(key, "must be a boolean");
  return v.get<bool>();
}

std::string string_field(const json& body, const std::string& key) {
  const json& v = body.at(key);
  if (!v.is_string()) fail_field(key, "must be a string");
  return v.get<std::string>();
}

std::string joined_text_parts(const json& content, const std::string& field, std::initializer_list<std::string_view> types,
                              std::initializer_list<std::string_view> fields) {
  if (content.is_string()) return content.get<std::string>();
  if (!content.is_array()) fail_field(field, "must be a string or an array of content parts");
  std::string text;
  for (size_t j = 0; j < content.size(); ++j) {
    const json& part = content[j];
    const std::string f = fmt::format("{}[{}]", field, j);
    if (!part.is_object()) fail_field(f, "must be an object");
    const std::string type = part.contains("type") && part.at("type").is_string() ? part.at("type").get<std::string>() : "";
    if (std::find(types.begin(), types.end(), type) == types.end())
      fail_field(f + ".type", fmt::format("only {} parts are supported (got \"{}\")", fmt::join(types, " and "), type));
    only_fields(part, fields, f + ".");
    if (!part.contains("text") || !part.at("text").is_string()) fail_field(f + ".text", "must be a string");
    text += part.at("text").get<std::string>();
  }
  return text;
}

}  // namespace lemma::server
