#include "lemma/server/embeddings_request.h"

#include <limits>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "lemma/server/api_error.h"
#include "lemma/server/body_fields.h"
#include "lemma/server/openai_request.h"

namespace lemma::server {

using nlohmann::json;

namespace {

std::vector<int32_t> token_ids(const json& v, const std::string& field) {
  std::vector<int32_t> ids;
  for (const json& t : v) {
    if (!t.is_number_integer() || t.get<int64_t>() < 0 || t.get<int64_t>() > std::numeric_limits<int32_t>::max())
      fail_field(field, "token ids must be non-negative integers");
    ids.push_back(t.get<int32_t>());
  }
  if (ids.empty()) fail_field(field, "must not be empty");
  return ids;
}

}  // namespace

ParsedEmbeddings parse_embeddings_request(const std::string& text) {
  const json body = parse_json_object(text);
  only_fields(body, {"model", "input", "encoding_format", "dimensions", "user"});
  ParsedEmbeddings out;
  if (has_field(body, "model")) out.model = string_field(body, "model");
  if (has_field(body, "user")) out.user = string_field(body, "user");
  if (has_field(body, "dimensions")) fail_field("dimensions", "is not supported: the vector has the model's hidden size");
  if (has_field(body, "encoding_format")) {
    const std::string f = string_field(body, "encoding_format");
    if (f != "float" && f != "base64") fail_field("encoding_format", "must be \"float\" or \"base64\"");
    out.base64 = f == "base64";
  }
  if (!has_field(body, "input")) fail_field("input", "is required");
  const json& in = body.at("input");
  if (in.is_string()) {
    out.inputs.emplace_back(in.get<std::string>());
  } else if (in.is_array() && !in.empty() && in.front().is_number()) {
    out.inputs.emplace_back(token_ids(in, "input"));
  } else if (in.is_array() && !in.empty()) {
    if (in.size() > kMaxEmbeddingInputs) fail_field("input", fmt::format("at most {} inputs per request", kMaxEmbeddingInputs));
    for (size_t i = 0; i < in.size(); ++i) {
      const std::string field = fmt::format("input[{}]", i);
      if (in[i].is_string()) out.inputs.emplace_back(in[i].get<std::string>());
      else if (in[i].is_array()) out.inputs.emplace_back(token_ids(in[i], field));
      else fail_field(field, "must be a string or an array of token ids");
    }
  } else {
    fail_field("input", "must be a string, an array of strings, an array of token ids, or an array of those");
  }
  for (size_t i = 0; i < out.inputs.size(); ++i) {
    if (const auto* s = std::get_if<std::string>(&out.inputs[i]); s && s->empty())
      fail_field(out.inputs.size() == 1 && in.is_string() ? "input" : fmt::format("input[{}]", i), "must not be empty");
  }
  return out;
}

}  // namespace lemma::server
