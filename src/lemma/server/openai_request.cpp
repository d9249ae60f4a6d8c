#include "lemma/server/openai_request.h"

#include "lemma/server/output_constraint.h"

#include <cmath>
#include <limits>

#include "lemma/server/api_error.h"
#include "lemma/server/request_fields.h"

namespace lemma::server {

using nlohmann::json;

namespace {

bool present(const json& body, const char* key) { return body.contains(key) && !body.at(key).is_null(); }

double get_number(const json& body, const char* key, double lo, double hi, const char* range) {
  const json& v = body.at(key);
  if (!v.is_number()) fail_field(key, "must be a number");
  double x = v.get<double>();
  if (!std::isfinite(x) || x < lo || x > hi) fail_field(key, fmt::format("{} is outside {}", v.dump(), range));
  return x;
}

int64_t get_int(const json& body, const char* key, int64_t lo, int64_t hi) {
  const json& v = body.at(key);
  if (!v.is_number_integer()) fail_field(key, "must be an integer");
  int64_t x = v.is_number_unsigned() && v.get<uint64_t>() > uint64_t(std::numeric_limits<int64_t>::max())
                  ? std::numeric_limits<int64_t>::max() : v.get<int64_t>();
  if (x < lo || x > hi) fail_field(key, fmt::format("{} is outside [{}, {}]", x, lo, hi));
  return x;
}

bool get_bool(const json& body, const char* key) {
  const json& v = body.at(key);
  if (!v.is_boolean()) fail_field(key, "must be a boolean");
  return v.get<bool>();
}

std::string get_string(const json& v, const std::string& field) {
  if (!v.is_string()) fail_field(field, "must be a string");
  return v.get<std::string>();
}

std::vector<int32_t> get_token_ids(const json& v, const std::string& field) {
  std::vector<int32_t> ids;
  for (const json& t : v) {
    if (!t.is_number_integer() || t.get<int64_t>() < 0 || t.get<int64_t>() > std::numeric_limits<int32_t>::max()) {
      fail_field(field, "token ids must be non-negative integers");
    }
    ids.push_back(t.get<int32_t>());
  }
  return ids;
}

void parse_prompt(const json& body, ParsedCompletion& out) {
  if (!present(body, "prompt")) fail_field("prompt", "is required");
  const json& p = body.at("prompt");
  if (p.is_string()) {
    out.prompt_text = p.get<std::string>();
  } else if (p.is_array() && !p.empty() && p.front().is_number()) {
    out.prompt_ids = get_token_ids(p, "prompt");
  } else if (p.is_array() && p.size() == 1 && p.front().is_string()) {
    out.prompt_text = p.front().get<std::string>();
  } else if (p.is_array() && p.size() == 1 && p.front().is_array()) {
    out.prompt_ids = get_token_ids(p.front(), "prompt");
  } else if (p.is_array() && p.size() > 1) {
    fail_field("prompt", "batched prompts (more than one) are not supported; send one request per prompt");
  } else {
    fail_field("prompt", "must be a string, an array of token ids, or an array with one of those");
  }
  if (out.prompt_text && out.prompt_text->empty()) fail_field("prompt", "must not be empty");
  if (!out.prompt_text && out.prompt_ids.empty()) fail_field("prompt", "must not be empty");
}

// Chat content: a string, or an array of {"type": "text", "text": ...} parts (joined).
std::string flatten_content(const json& content, const std::string& field) {
  if (content.is_null()) return "";
  if (content.is_string()) return content.get<std::string>();
  if (!content.is_array()) fail_field(field, "must be a string or an array of content parts");
  std::string text;
  for (const json& part : content) {
    if (!part.is_object() || part.value("type", "") != "text" || !part.contains("text") || !part.at("text").is_string()) {
      fail_field(field, "only {\"type\": \"text\", \"text\": ...} content parts are supported");
    }
    text += part.at("text").get<std::string>();
  }
  return text;
}

void parse_messages(const json& body, ParsedCompletion& out) {
  if (!present(body, "messages")) fail_field("messages", "is required");
  const json& msgs = body.at("messages");
  if (!msgs.is_array() || msgs.empty()) fail_field("messages", "must be a non-empty array");
  out.messages = nlohmann::ordered_json::array();
  for (size_t i = 0; i < msgs.size(); ++i) {
    const json& m = msgs[i];
    std::string field = fmt::format("messages[{}]", i);
    if (!m.is_object()) fail_field(field, "must be an object");
    if (!m.contains("role") || !m.at("role").is_string()) fail_field(field + ".role", "must be a string");
    check_role(m.at("role").get<std::string>(), field + ".role");
    nlohmann::ordered_json msg = nlohmann::ordered_json::parse(m.dump());
    msg["content"] = flatten_content(m.value("content", json()), field + ".content");
    out.messages.push_back(std::move(msg));
  }
  if (present(body, "tools")) out.tools = nlohmann::ordered_json::parse(body.at("tools").dump());
  out.wants_tool_calls = out.tools.is_array() && !out.tools.empty() &&
                         !(present(body, "tool_choice") && body.at("tool_choice") == "none");
  if (present(body, "parallel_tool_calls")) out.parallel_tool_calls = get_bool(body, "parallel_tool_calls");
  if (present(body, "tool_choice")) {  // (shape checked by check_tools)
    const json& choice = body.at("tool_choice");
    if (choice == "required") out.forced_tool = "";
    if (choice.is_object()) out.forced_tool = choice.at("function").at("name").get<std::string>();
  }
}

void parse_stop(const json& body, ParsedCompletion& out) {
  if (!present(body, "stop")) return;
  const json& s = body.at("stop");
  if (s.is_string()) {
    out.stop.push_back(s.get<std::string>());
  } else if (s.is_array()) {
    for (const json& x : s) out.stop.push_back(get_string(x, "stop"));
  } else {
    fail_field("stop", "must be a string or an array of strings");
  }
  if (out.stop.size() > 16) fail_field("stop", "at most 16 stop strings");
  for (const auto& x : out.stop) if (x.empty()) fail_field("stop", "stop strings must not be empty");
}

void parse_sampling(const json& body, ApiKind kind, ParsedCompletion& out) {
  SamplingParams& s = out.sampling;
  if (present(body, "temperature")) s.temperature = float(get_number(body, "temperature", 0, 2, "[0, 2]"));
  if (present(body, "top_p")) s.top_p = float(get_number(body, "top_p", 0, 1, "(0, 1]"));
  if (s.top_p <= 0.0f) fail_field("top_p", "must be > 0");
  if (present(body, "top_k")) s.top_k = int32_t(get_int(body, "top_k", -1, std::numeric_limits<int32_t>::max()));
  if (present(body, "min_p")) s.min_p = float(get_number(body, "min_p", 0, 1, "[0, 1]"));
  if (present(body, "presence_penalty")) s.presence_penalty = float(get_number(body, "presence_penalty", -2, 2, "[-2, 2]"));
  if (present(body, "frequency_penalty")) s.frequency_penalty = float(get_number(body, "frequency_penalty", -2, 2, "[-2, 2]"));
  if (present(body, "repetition_penalty")) {
    s.repetition_penalty = float(get_number(body, "repetition_penalty", 0, 1e6, "(0, inf)"));
    if (s.repetition_penalty <= 0.0f) fail_field("repetition_penalty", "must be > 0");
  }
  if (present(body, "seed")) s.seed = uint64_t(get_int(body, "seed", std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max()));
  if (present(body, "logit_bias")) {
    const json& lb = body.at("logit_bias");
    if (!lb.is_object()) fail_field("logit_bias", "must be an object mapping token ids to numbers");
    for (const auto& [key, value] : lb.items()) {
      int64_t id = -1;
      try { size_t used = 0; id = std::stoll(key, &used); if (used != key.size()) id = -1; } catch (...) { id = -1; }
      if (id < 0 || id > std::numeric_limits<int32_t>::max()) fail_field("logit_bias", "key `" + key + "` is not a token id");
      if (!value.is_number() || value.get<double>() < -100 || value.get<double>() > 100) {
        fail_field("logit_bias", "value for token " + key + " must be a number in [-100, 100]");
      }
      s.logit_bias.emplace_back(int32_t(id), value.get<float>());
    }
  }
  // Logprobs: completions use an integer `logprobs` (count of top entries); chat uses a boolean
  // `logprobs` plus `top_logprobs`.
  if (kind == ApiKind::kCompletions) {
    if (present(body, "logprobs")) {
      s.top_logprobs = int32_t(get_int(body, "logprobs", 0, 20));
      s.logprobs = true;
    }
  } else {
    if (present(body, "logprobs")) s.logprobs = get_bool(body, "logprobs");
    if (present(body, "top_logprobs")) {
      s.top_logprobs = int32_t(get_int(body, "top_logprobs", 0, 20));
      if (!s.logprobs && s.top_logprobs > 0) fail_field("top_logprobs", "needs \"logprobs\": true");
    }
  }
}

// vLLM's beam search fields: use_beam_search, best_of (the beam width; default n), length_penalty,
// early_stopping (true, false or "never"). Without beam search best_of must equal n (best-of
// sampling is not offered) and the other two are refused rather than ignored.
// Attention sinks (G10): "attention_sinks" / "streaming_window" override the server's default
// (--attention-sinks / --streaming-window) field by field.
void parse_streaming(const json& body, const ServerConfig& config, ParsedCompletion& out) {
  out.streaming = config.default_streaming;
  const bool sinks = present(body, "attention_sinks"), window = present(body, "streaming_window");
  if (!sinks && !window) return;
  const int64_t context = config.max_model_len > 0 ? config.max_model_len : std::numeric_limits<int32_t>::max();
  if (sinks) out.streaming.num_sinks = get_int(body, "attention_sinks", 0, context - 1);
  if (window) out.streaming.window = get_int(body, "streaming_window", 1, context);
  if (sinks && out.streaming.window == 0)
    fail_field("attention_sinks", "needs \"streaming_window\" >= 1 (this server has no default window)");
  if (out.streaming.cache_tokens() > context)
    fail_field(window ? "streaming_window" : "attention_sinks",
               fmt::format("attention_sinks + streaming_window = {} exceeds max_model_len {}",
                           out.streaming.cache_tokens(), context));
  if (out.streaming.enabled() && out.sampling.beam_search)
    fail_field("use_beam_search", "beam search is not supported with attention sinks (streaming_window)");
}

void parse_beam_search(const json& body, const ServerConfig& config, ParsedCompletion& out) {
  const bool beam = present(body, "use_beam_search") && get_bool(body, "use_beam_search");
  if (!beam) {
    if (present(body, "best_of") && body.at("best_of") != body.value("n", json(1)))
      fail_field("best_of", "best_of other than n needs \"use_beam_search\": true (best-of sampling is not supported)");
    for (const char* key : {"length_penalty", "early_stopping"})
      if (present(body, key)) fail_field(key, "only applies with \"use_beam_search\": true");
    return;
  }
  BeamSearchParams b;
  if (present(body, "best_of")) {
    b.width = int32_t(get_int(body, "best_of", 1, config.max_beam_width));
  } else {
    if (out.n > config.max_beam_width)
      fail_field("n", fmt::format("beam search of width n = {} is more than this server's {} beams", out.n,
                                  config.max_beam_width));
    b.width = out.n;
  }
  if (out.n > b.width) fail_field("n", fmt::format("n = {} is more than best_of = {}, the beam width", out.n, b.width));
  if (present(body, "length_penalty"))
    b.length_penalty = float(get_number(body, "length_penalty", -1e3, 1e3, "[-1000, 1000]"));
  if (present(body, "early_stopping")) {
    const json& v = body.at("early_stopping");
    if (v == "never") b.early_stopping = EarlyStopping::kNever;
    else if (v.is_boolean()) b.early_stopping = v.get<bool>() ? EarlyStopping::kWhenFull : EarlyStopping::kHeuristic;
    else fail_field("early_stopping", "must be true, false or \"never\"");
  }
  if (out.stream) fail_field("stream", "beam search returns only its final hypotheses: send \"stream\": false");
  if (out.sampling.logprobs) fail_field("logprobs", "is not supported with beam search");
  out.sampling.beam_search = b;
}

}  // namespace

json parse_json_object(const std::string& body) {
  json j = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) throw ApiError(400, "malformed JSON in the request body", std::nullopt, "invalid_json");
  if (!j.is_object()) throw ApiError(400, "the request body must be a JSON object", std::nullopt, "invalid_json");
  return j;
}

ParsedCompletion parse_completion_request(const std::string& text, ApiKind kind, const ServerConfig& config) {
  json body = parse_json_object(text);
  reject_unknown_fields(body, kind);
  if (kind == ApiKind::kChat) check_tools(body);
  ParsedCompletion out;
  out.kind = kind;
  // (Parsed again in order when asked for: a schema's properties keep the client's order.)
  for (const char* key : kOutputConstraintFields) {
    if (!body.contains(key)) continue;
    out.output_constraint = parse_output_constraint(nlohmann::ordered_json::parse(text));
    break;
  }
  if (present(body, "model")) out.model = get_string(body.at("model"), "model");
  if (present(body, "stream")) out.stream = get_bool(body, "stream");
  if (present(body, "stream_options")) {
    const json& so = body.at("stream_options");
    if (!so.is_object()) fail_field("stream_options", "must be an object");
    if (!out.stream) fail_field("stream_options", "is only allowed with \"stream\": true");
    if (present(so, "include_usage")) out.include_usage = get_bool(so, "include_usage");
  }
  if (kind == ApiKind::kCompletions) parse_prompt(body, out); else parse_messages(body, out);
  parse_sampling(body, kind, out);
  for (const char* key : {"max_tokens", "max_completion_tokens"}) {
    if (present(body, key)) out.max_tokens = get_int(body, key, 1, std::numeric_limits<int32_t>::max());
  }
  if (present(body, "n")) out.n = int(get_int(body, "n", 1, config.max_n));
  parse_stop(body, out);
  if (present(body, "stop_token_ids")) {
    if (!body.at("stop_token_ids").is_array()) fail_field("stop_token_ids", "must be an array of token ids");
    out.stop_token_ids = get_token_ids(body.at("stop_token_ids"), "stop_token_ids");
  }
  if (present(body, "ignore_eos")) out.ignore_eos = get_bool(body, "ignore_eos");
  if (kind == ApiKind::kCompletions && present(body, "echo")) out.echo = get_bool(body, "echo");
  if (present(body, "user")) out.user = get_string(body.at("user"), "user");
  parse_beam_search(body, config, out);
  parse_streaming(body, config, out);
  return out;
}

}  // namespace lemma::server
