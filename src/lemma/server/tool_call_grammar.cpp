#include "lemma/server/tool_call_grammar.h"

#include <bitset>
#include <cctype>
#include <vector>

#include "lemma/base/error.h"
#include "lemma/base/logging.h"
#include "lemma/grammar/composed_grammar.h"
#include "lemma/grammar/json_schema.h"
#include "lemma/grammar/marker_free_text.h"
#include "lemma/server/api_error.h"
#include "lemma/server/output_constraint.h"

namespace lemma::server {

namespace {

using ojson = nlohmann::ordered_json;
using grammar::ExprPtr;

constexpr std::string_view kHermesOpen = "<tool_call>", kMistralCalls = "[TOOL_CALLS]", kPythonTag = "<|python_tag|>";

// A tool's name and parameter schema ({"type": "object"} when it has none).
struct Tool {
  std::string name;
  ojson parameters;
};

std::vector<Tool> tools_of(const ojson& tools, const std::string& only) {
  std::vector<Tool> out;
  for (const ojson& tool : tools) {
    const ojson& fn = tool.at("function");
    std::string name = fn.at("name").get<std::string>();
    if (!only.empty() && name != only) continue;
    out.push_back({std::move(name), fn.contains("parameters") ? fn.at("parameters") : ojson{{"type", "object"}}});
  }
  return out;
}

bool is_special_token(const grammar::VocabularyIndex* vocabulary, std::string_view text) {
  if (!vocabulary) return false;
  const auto id = grammar::find_token(vocabulary->vocab, text);
  return id && vocabulary->vocab.special[static_cast<size_t>(*id)];
}

// A marker the model writes: its special token where the vocabulary has one, else its bytes.
ExprPtr marker(const grammar::VocabularyIndex* vocabulary, std::string_view text) {
  return is_special_token(vocabulary, text) ? grammar::token_named(std::string(text)) : grammar::literal(text);
}

ExprPtr white_space(int max) {
  std::bitset<256> ws;
  for (unsigned char c : {' ', '\t', '\n', '\r'}) ws.set(c);
  return max < 0 ? grammar::star(grammar::bytes(ws)) : grammar::repeat(grammar::bytes(ws), 0, max);
}

// One call object {"name": <const>, <args_key>: <parameters>}, any of `tools`.
ojson call_object_schema(const std::vector<Tool>& tools, const char* args_key) {
  ojson calls = ojson::array();
  for (const Tool& t : tools) {
    calls.push_back({{"type", "object"},
                     {"properties", {{"name", {{"const", t.name}}}, {args_key, t.parameters}}},
                     {"required", {"name", args_key}},
                     {"additionalProperties", false}});
  }
  return calls.size() == 1 ? calls[0] : ojson{{"anyOf", calls}};
}

// The calls of a message in `syntax`'s format (one, or one or more when `parallel`), into `b`.
// Throws grammar errors (Unsupported, InvalidArgument) for schemas that cannot be honoured.
ExprPtr calls_expr(grammar::ComposedGrammarBuilder& b, const std::vector<Tool>& tools, const ToolCallSyntax& syntax,
                   bool parallel, const grammar::VocabularyIndex* vocabulary) {
  using namespace grammar;
  const auto repeated = [&](ExprPtr call, ExprPtr separator) {
    return parallel ? seq({call, star(seq({std::move(separator), call}))}) : call;
  };
  JsonSchemaOptions options = serving_json_options();
  switch (syntax.format) {
    case ToolCallFormat::kHermes: {
      options.prefix = "<tool_call>\n";
      options.suffix = "\n</tool_call>";
      const ExprPtr call = rule_ref(b.embed(json_schema_grammar(call_object_schema(tools, "arguments"), options)));
      return repeated(call, white_space(4));
    }
    case ToolCallFormat::kLlama3Json: {
      const ExprPtr call = rule_ref(b.embed(json_schema_grammar(call_object_schema(tools, "parameters"), options)));
      const ExprPtr tag = is_special_token(vocabulary, kPythonTag) ? optional(seq({token_named(std::string(kPythonTag)), white_space(-1)})) : empty();
      return seq({tag, repeated(call, seq({white_space(4), literal(";"), white_space(4)}))});
    }
    case ToolCallFormat::kMistral: {
      if (syntax.mistral_form == MistralCallForm::kJsonArray) {
        ojson array = {{"type", "array"}, {"items", call_object_schema(tools, "arguments")}, {"minItems", 1}};
        if (!parallel) array["maxItems"] = 1;
        options.prefix_token = std::string(kMistralCalls);
        return rule_ref(b.embed(json_schema_grammar(array, options)));
      }
      std::vector<ExprPtr> named;
      for (const Tool& t : tools) {
        ExprPtr id = empty();
        if (syntax.mistral_form == MistralCallForm::kNameCallIdArgs) {  // 9 alphanumerics, as the template demands
          std::bitset<256> alnum;
          for (int c = 0; c < 256; ++c) alnum[size_t(c)] = std::isalnum(c) != 0 && c < 128;
          id = optional(seq({marker(vocabulary, "[CALL_ID]"), repeat(bytes(alnum), 9, 9)}));
        }
        named.push_back(seq({literal(t.name), id, marker(vocabulary, "[ARGS]"),
                             rule_ref(b.embed(json_schema_grammar(t.parameters, options)))}));
      }
      const ExprPtr call = seq({token_named(std::string(kMistralCalls)), alt(std::move(named))});
      return repeated(call, white_space(4));
    }
    case ToolCallFormat::kNone: break;
  }
  return nothing();
}

std::shared_ptr<const grammar::TokenConstraint> finish(grammar::ComposedGrammarBuilder& b, int root,
                                                       std::shared_ptr<const grammar::VocabularyIndex> vocabulary,
                                                       const std::string& description) {
  grammar::Grammar g = b.build(root);
  if (g.has_token_edges()) {
    if (!vocabulary) fail<InvalidArgument>("no vocabulary to find the call marker token in");
    g = grammar::resolve_tokens(std::move(g), vocabulary->vocab);
  }
  return std::make_shared<const grammar::TokenConstraint>(
      grammar::TokenConstraint{std::make_shared<const grammar::Grammar>(std::move(g)), std::move(vocabulary), description});
}

}  // namespace

MistralCallForm detect_mistral_call_form(std::string_view source) {
  if (source.find("[ARGS]") == std::string_view::npos) return MistralCallForm::kJsonArray;
  return source.find("[CALL_ID]") == std::string_view::npos ? MistralCallForm::kNameArgs : MistralCallForm::kNameCallIdArgs;
}

std::shared_ptr<const grammar::TokenConstraint> compile_forced_tool_call(
    const ojson& tools, const std::string& forced_tool, const ToolCallSyntax& syntax,
    std::shared_ptr<const grammar::VocabularyIndex> vocabulary) {
  const auto refuse = [&](const std::string& why) {
    throw ApiError(400,
                   std::string("tool_choice cannot force a call in this chat template's tool format (") +
                       tool_call_format_name(syntax.format) + ")" + (why.empty() ? "" : ": " + why) + "; use \"auto\"",
                   "tool_choice", "invalid_request_error");
  };
  if (syntax.format == ToolCallFormat::kNone) refuse("");
  grammar::ComposedGrammarBuilder b;
  const int root = b.declare("root");
  try {
    b.define(root, calls_expr(b, tools_of(tools, forced_tool), syntax, /*parallel=*/false, vocabulary.get()));
  } catch (const Error& e) {
    throw ApiError(400, std::string("tool_choice: a function's parameters cannot be honoured exactly: ") + e.what(),
                   "tool_choice", "invalid_request_error");
  }
  try {
    return finish(b, root, std::move(vocabulary), "tool_choice");
  } catch (const Error& e) {
    refuse(e.what());
  }
  return nullptr;
}

std::shared_ptr<const grammar::TokenConstraint> compile_lazy_tool_calls(
    const ojson& tools, const ToolCallSyntax& syntax, bool parallel,
    std::shared_ptr<const grammar::VocabularyIndex> vocabulary) {
  using namespace grammar;
  if (syntax.format == ToolCallFormat::kNone) return nullptr;
  try {
    ComposedGrammarBuilder b;
    const int root = b.declare("root");
    const ExprPtr calls = calls_expr(b, tools_of(tools, ""), syntax, parallel, vocabulary.get());
    switch (syntax.format) {
      case ToolCallFormat::kHermes: b.define(root, seq({marker_free_text(kHermesOpen), optional(calls)})); break;
      case ToolCallFormat::kMistral: b.define(root, seq({marker_free_text(kMistralCalls), optional(calls)})); break;
      case ToolCallFormat::kLlama3Json:
        // The whole message is calls or text: text never opens as a call object would.
        b.define(root, alt({text_not_starting_with("{ \"name\""), seq({white_space(-1), calls})}));
        break;
      case ToolCallFormat::kNone: break;
    }
    return finish(b, root, std::move(vocabulary), "tools");
  } catch (const Error& e) {
    log().warn("tool calls: no lazy grammar for these tools ({}); calls are parsed from unconstrained text", e.what());
    return nullptr;
  }
}

}  // namespace lemma::server
