#include "lemma/server/response_format.h"

namespace lemma::server {

namespace {
const char* object_name(ApiKind kind, bool chunk) {
  if (kind == ApiKind::kCompletions) return "text_completion";
  return chunk ? "chat.completion.chunk" : "chat.completion";
}

ojson bytes_json(const std::string& s) {
  ojson b = ojson::array();
  for (unsigned char c : s) b.push_back(int(c));
  return b;
}
}  // namespace

std::string dump_json(const ojson& j) { return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace); }

ojson usage_json(const Usage& u) {
  return ojson{{"prompt_tokens", u.prompt_tokens},
               {"completion_tokens", u.completion_tokens},
               {"total_tokens", u.prompt_tokens + u.completion_tokens},
               {"prompt_tokens_details", {{"cached_tokens", u.cached_tokens}}}};
}

ojson logprobs_json(ApiKind kind, const Tokenizer& tok, const std::vector<int32_t>& ids,
                    const std::vector<SampleResult>& logprobs, int64_t text_offset) {
  if (kind == ApiKind::kCompletions) {
    ojson out = {{"tokens", ojson::array()}, {"token_logprobs", ojson::array()}, {"top_logprobs", ojson::array()},
                 {"text_offset", ojson::array()}};
    for (size_t i = 0; i < ids.size() && i < logprobs.size(); ++i) {
      std::string piece = tok.token_bytes(ids[i]);
      out["tokens"].push_back(piece);
      out["token_logprobs"].push_back(logprobs[i].logprob);
      ojson top = ojson::object();
      for (const auto& [id, lp] : logprobs[i].top) top[tok.token_bytes(id)] = lp;
      out["top_logprobs"].push_back(top);
      out["text_offset"].push_back(text_offset);
      text_offset += int64_t(piece.size());
    }
    return out;
  }
  ojson content = ojson::array();
  for (size_t i = 0; i < ids.size() && i < logprobs.size(); ++i) {
    std::string piece = tok.token_bytes(ids[i]);
    ojson top = ojson::array();
    for (const auto& [id, lp] : logprobs[i].top) {
      std::string t = tok.token_bytes(id);
      top.push_back({{"token", t}, {"logprob", lp}, {"bytes", bytes_json(t)}});
    }
    content.push_back({{"token", piece}, {"logprob", logprobs[i].logprob}, {"bytes", bytes_json(piece)}, {"top_logprobs", top}});
  }
  return ojson{{"content", content}};
}

void append_logprobs(ApiKind kind, ojson& into, const ojson& more) {
  if (into.is_null()) {
    into = more;
    return;
  }
  for (auto& [key, value] : more.items()) {
    for (const auto& x : value) into[key].push_back(x);
  }
}

ojson choice_json(ApiKind kind, int index, const std::string& text, const ojson& logprobs,
                  const std::optional<std::string>& finish_reason) {
  ojson c;
  c["index"] = index;
  if (kind == ApiKind::kCompletions) {
    c["text"] = text;
  } else {
    c["message"] = {{"role", "assistant"}, {"content", text}};
  }
  c["logprobs"] = logprobs;
  c["finish_reason"] = finish_reason ? ojson(*finish_reason) : ojson(nullptr);
  return c;
}

std::string tool_call_id(const ResponseIds& ids, size_t k, ToolCallFormat format) {
  std::string id = "call_" + ids.id + "_" + std::to_string(k);
  if (format != ToolCallFormat::kMistral) return id;
  uint64_t h = 14695981039346656037ull;  // FNV-1a 64 of the long id, in base 62
  for (unsigned char c : id) h = (h ^ c) * 1099511628211ull;
  static constexpr char kDigits[] = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
  std::string out(9, '0');
  for (char& c : out) {
    c = kDigits[h % 62];
    h /= 62;
  }
  return out;
}

void add_tool_calls(ojson& choice, const ResponseIds& ids, const std::vector<ToolCall>& calls, ToolCallFormat format) {
  ojson& message = choice["message"];
  if (message["content"] == "") message["content"] = nullptr;
  ojson out = ojson::array();
  for (size_t k = 0; k < calls.size(); ++k) {
    out.push_back({{"id", tool_call_id(ids, k, format)}, {"type", "function"},
                   {"function", {{"name", calls[k].name}, {"arguments", calls[k].arguments}}}});
  }
  message["tool_calls"] = std::move(out);
}

ojson tool_call_chunk_json(const ResponseIds& ids, int index, const ToolCallDelta& call, ToolCallFormat format) {
  ojson delta{{"index", call.index}};
  if (call.opens) {
    delta["id"] = tool_call_id(ids, call.index, format);
    delta["type"] = "function";
    delta["function"] = {{"name", call.name}, {"arguments", ""}};
  } else {
    delta["function"] = {{"arguments", call.arguments}};
  }
  ojson c{{"index", index}, {"delta", {{"tool_calls", ojson::array({delta})}}}, {"logprobs", nullptr},
          {"finish_reason", nullptr}};
  return ojson{{"id", ids.id}, {"object", "chat.completion.chunk"}, {"created", ids.created}, {"model", ids.model},
               {"choices", ojson::array({c})}};
}

ojson response_json(ApiKind kind, const ResponseIds& ids, ojson choices, const Usage& usage) {
  return ojson{{"id", ids.id}, {"object", object_name(kind, false)}, {"created", ids.created}, {"model", ids.model},
               {"choices", std::move(choices)}, {"usage", usage_json(usage)}};
}

ojson chunk_json(ApiKind kind, const ResponseIds& ids, int index, const std::string& text, const ojson& logprobs,
                 const std::optional<std::string>& finish_reason, bool with_role) {
  ojson c;
  c["index"] = index;
  if (kind == ApiKind::kCompletions) {
    c["text"] = text;
  } else {
    ojson delta = ojson::object();
    if (with_role) delta["role"] = "assistant";
    if (!text.empty() || with_role) delta["content"] = text;
    c["delta"] = delta;
  }
  c["logprobs"] = logprobs;
  c["finish_reason"] = finish_reason ? ojson(*finish_reason) : ojson(nullptr);
  return ojson{{"id", ids.id}, {"object", object_name(kind, true)}, {"created", ids.created}, {"model", ids.model},
               {"choices", ojson::array({c})}};
}

ojson usage_chunk_json(ApiKind kind, const ResponseIds& ids, const Usage& usage) {
  return ojson{{"id", ids.id}, {"object", object_name(kind, true)}, {"created", ids.created}, {"model", ids.model},
               {"choices", ojson::array()}, {"usage", usage_json(usage)}};
}

std::string sse_event(const ojson& payload) { return sse_event_raw(dump_json(payload)); }

std::string sse_event_raw(const std::string& json_text) { return "data: " + json_text + "\n\n"; }

}  // namespace lemma::server
