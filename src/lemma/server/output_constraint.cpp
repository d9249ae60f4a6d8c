#include "lemma/server/output_constraint.h"

#include "lemma/base/error.h"
#include "lemma/grammar/gbnf.h"
#include "lemma/grammar/json_schema.h"
#include "lemma/grammar/text_grammars.h"
#include "lemma/grammar/token_constraint.h"
#include "lemma/server/api_error.h"

namespace lemma::server {

namespace {

using json = nlohmann::ordered_json;
using ojson = nlohmann::ordered_json;
using Kind = OutputConstraintSpec::Kind;

// JSON's white space as llama.cpp's grammars allow it: a space, or a newline and up to 20 spaces or
// tabs of indentation, in one place: room for indented output, none for a model that would rather
// emit white space than the structure.
const grammar::JsonSchemaOptions kServingJson{.compact = false, .max_whitespace = 20, .prefix = {}, .suffix = {}, .prefix_token = {}};

[[noreturn]] void bad(const std::string& field, const std::string& what) {
  throw ApiError(400, field + " " + what, field, "invalid_request_error");
}

// The spec of one source field, or kNone when absent.
OutputConstraintSpec from_field(const json& body, const char* key) {
  OutputConstraintSpec s;
  if (!body.contains(key) || body.at(key).is_null()) return s;
  const json& v = body.at(key);
  const std::string k = key;
  if (k == "response_format") {
    if (!v.is_object() || !v.contains("type") || !v.at("type").is_string()) bad(k, "must be an object with a \"type\"");
    const std::string type = v.at("type").get<std::string>();
    if (type == "text") return s;
    if (type == "json_object") {
      s.kind = Kind::kJsonObject;
      s.field = "response_format";
      return s;
    }
    if (type != "json_schema") bad("response_format.type", "must be \"text\", \"json_object\" or \"json_schema\", got \"" + type + "\"");
    if (!v.contains("json_schema") || !v.at("json_schema").is_object())
      bad("response_format.json_schema", "must be an object {\"name\", \"schema\", \"strict\"}");
    const json& js = v.at("json_schema");
    if (js.contains("name") && !js.at("name").is_string()) bad("response_format.json_schema.name", "must be a string");
    if (js.contains("strict") && !js.at("strict").is_boolean() && !js.at("strict").is_null())
      bad("response_format.json_schema.strict", "must be a boolean");
    if (!js.contains("schema") || !(js.at("schema").is_object() || js.at("schema").is_boolean()))
      bad("response_format.json_schema.schema", "must be a JSON schema object");
    s.kind = Kind::kJsonSchema;
    s.schema = js.at("schema");
    s.field = "response_format.json_schema.schema";
    return s;
  }
  if (k == "guided_json" || k == "json_schema") {
    const json schema = v.is_string() ? json::parse(v.get<std::string>(), nullptr, false) : v;
    if (!(schema.is_object() || schema.is_boolean())) bad(k, "must be a JSON schema (an object, or its text)");
    s.kind = Kind::kJsonSchema;
    s.schema = schema;
    s.field = k;
    return s;
  }
  if (k == "guided_regex") {
    if (!v.is_string()) bad(k, "must be a string");
    s.kind = Kind::kRegex;
    s.regex = v.get<std::string>();
    s.field = k;
    return s;
  }
  if (k == "grammar" || k == "guided_grammar") {
    if (!v.is_string()) bad(k, "must be a string (a GBNF grammar)");
    s.kind = Kind::kGbnf;
    s.gbnf = v.get<std::string>();
    s.field = k;
    return s;
  }
  if (k == "guided_choice") {
    if (!v.is_array() || v.empty()) bad(k, "must be a non-empty array of strings");
    for (const json& c : v) {
      if (!c.is_string()) bad(k, "must be a non-empty array of strings");
      s.choices.push_back(c.get<std::string>());
    }
    s.kind = Kind::kChoice;
    s.field = k;
    return s;
  }
  return s;
}

}  // namespace

const grammar::JsonSchemaOptions& serving_json_options() { return kServingJson; }

OutputConstraintSpec parse_output_constraint(const json& body) {
  json fields = body;
  if (body.contains("structured_outputs") && !body.at("structured_outputs").is_null()) {
    const json& so = body.at("structured_outputs");
    if (!so.is_object()) bad("structured_outputs", "must be an object {\"json\" | \"regex\" | \"choice\" | \"grammar\"}");
    for (const auto& [key, value] : so.items()) {
      if (key == "json") fields["guided_json"] = value;
      else if (key == "regex") fields["guided_regex"] = value;
      else if (key == "choice") fields["guided_choice"] = value;
      else if (key == "grammar") fields["guided_grammar"] = value;
      else bad("structured_outputs." + key, "is not supported (json, regex, choice, grammar are)");
    }
  }
  OutputConstraintSpec chosen;
  for (const char* key : {"response_format", "guided_json", "json_schema", "guided_regex", "guided_choice",
                          "guided_grammar", "grammar"}) {
    OutputConstraintSpec s = from_field(fields, key);
    if (s.kind == Kind::kNone) continue;
    if (chosen.kind != Kind::kNone) bad(key, "conflicts with " + chosen.field + ": ask for one output format");
    chosen = std::move(s);
  }
  return chosen;
}

std::shared_ptr<const grammar::TokenConstraint> compile_output_constraint(
    const OutputConstraintSpec& spec, std::shared_ptr<const grammar::VocabularyIndex> vocabulary) {
  if (spec.kind == Kind::kNone) return nullptr;
  try {
    grammar::Grammar g;
    switch (spec.kind) {
      case Kind::kJsonObject: g = grammar::json_schema_grammar(ojson{{"type", "object"}}, kServingJson); break;
      case Kind::kJsonSchema: g = grammar::json_schema_grammar(spec.schema, kServingJson); break;
      case Kind::kRegex: g = grammar::regex_grammar(spec.regex); break;
      case Kind::kChoice: g = grammar::choice_grammar(spec.choices); break;
      case Kind::kGbnf:
        g = grammar::gbnf_grammar(spec.gbnf);
        if (vocabulary) g = grammar::resolve_tokens(std::move(g), vocabulary->vocab);  // <[id]>, <|name|>
        break;
      case Kind::kNone: break;
    }
    return std::make_shared<const grammar::TokenConstraint>(
        grammar::TokenConstraint{std::make_shared<const grammar::Grammar>(std::move(g)), std::move(vocabulary), spec.field});
  } catch (const Error& e) {
    if (spec.kind == Kind::kGbnf) bad(spec.field, std::string("is not a grammar lemma can use: ") + e.what());
    bad(spec.field, std::string("cannot be honoured exactly: ") + e.what());
  }
}

}  // namespace lemma::server
