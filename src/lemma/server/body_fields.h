// Typed reads of a request body's fields for the endpoint parsers of the Responses, Messages and
// Embeddings APIs: each read checks type and range and throws ApiError(400) naming the field.
// Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace lemma::server {

// The field is present and not null.
bool has_field(const nlohmann::json& body, const std::string& key);
// Throws 400 naming the first field of `body` not in `known`.
void only_fields(const nlohmann::json& body, std::initializer_list<std::string_view> known, const std::string& prefix = "");

double number_field(const nlohmann::json& body, const std::string& key, double lo, double hi);
int64_t integer_field(const nlohmann::json& body, const std::string& key, int64_t lo, int64_t hi);
bool bool_field(const nlohmann::json& body, const std::string& key);
std::string string_field(const nlohmann::json& body, const std::string& key);

// Message content: a string, or an array of parts each of one of `types` with a string "text" and
// no fields but `fields`; the texts joined. A part of another type is a 400 on `<field>[j].type`.
std::string joined_text_parts(const nlohmann::json& content, const std::string& field,
                              std::initializer_list<std::string_view> types, std::initializer_list<std::string_view> fields);

}  // namespace lemma::server
