#include "lemma/server/prompt_builder.h"

#include "lemma/server/api_error.h"

namespace lemma::server {

namespace {
std::optional<std::string> token_text(const Tokenizer& tok, std::optional<int32_t> id) {
  if (!id) return std::nullopt;
  return std::string(tok.token_text(*id));
}
}  // namespace

MarkedText render_chat_prompt(const ParsedCompletion& request, const Tokenizer& tokenizer,
                              const ChatTemplate& chat_template) {
  ChatTemplateInputs inputs;
  inputs.messages = request.messages;
  inputs.tools = request.tools;
  inputs.add_generation_prompt = true;
  inputs.bos_token = token_text(tokenizer, tokenizer.bos_id());
  inputs.eos_token = token_text(tokenizer, tokenizer.eos_id());
  try {
    return chat_template.render_marked(inputs);
  } catch (const TemplateError& e) {
    throw ApiError(400, std::string("messages: the chat template rejected them: ") + e.what(), "messages");
  }
}

void check_prompt_bytes(size_t bytes, const Tokenizer& tokenizer, const ServerConfig& config, const std::string& field) {
  const size_t per_token = tokenizer.max_token_bytes();
  if (config.max_model_len <= 0 || per_token == 0) return;
  const auto at_least = int64_t((bytes + per_token - 1) / per_token);
  if (at_least >= config.max_model_len) {
    fail_field(field, fmt::format("the prompt has at least {} tokens ({} bytes, at most {} bytes per token); the model's "
                                  "context is {} tokens",
                                  at_least, bytes, per_token, config.max_model_len));
  }
}

std::vector<int32_t> tokenize_chat_prompt(const ParsedCompletion& request, const Tokenizer& tokenizer,
                                          const ChatTemplate& chat_template, const ServerConfig& config) {
  const MarkedText prompt = render_chat_prompt(request, tokenizer, chat_template);
  check_prompt_bytes(prompt.size(), tokenizer, config, "messages");
  if (config.allow_special_tokens_in_content) return tokenizer.encode(prompt.text(), /*add_special=*/false, /*parse_special=*/true);
  return tokenizer.encode_marked(prompt, /*add_special=*/false);
}

void build_prompt(ParsedCompletion& request, const Tokenizer& tokenizer, const ChatTemplate& chat_template,
                  const ServerConfig& config) {
  const int32_t vocab = tokenizer.vocab_size();
  if (request.kind == ApiKind::kChat) {
    request.prompt_ids = tokenize_chat_prompt(request, tokenizer, chat_template, config);
    if (!request.assistant_prefill.empty()) {
      const std::vector<int32_t> more = tokenizer.encode(request.assistant_prefill, /*add_special=*/false, /*parse_special=*/false);
      request.prompt_ids.insert(request.prompt_ids.end(), more.begin(), more.end());
    }
  } else if (request.prompt_text) {
    check_prompt_bytes(request.prompt_text->size(), tokenizer, config, "prompt");
    request.prompt_ids = tokenizer.encode(*request.prompt_text, /*add_special=*/true, /*parse_special=*/false);
  }
  for (int32_t id : request.prompt_ids) {
    if (id >= vocab) fail_field("prompt", fmt::format("token id {} is outside the vocabulary [0, {})", id, vocab));
  }
  for (int32_t id : request.stop_token_ids) {
    if (id >= vocab) fail_field("stop_token_ids", fmt::format("token id {} is outside [0, {})", id, vocab));
  }
  for (const auto& [id, bias] : request.sampling.logit_bias) {
    if (id >= vocab) fail_field("logit_bias", fmt::format("token id {} is outside [0, {})", id, vocab));
  }
  if (request.sampling.top_logprobs > vocab) fail_field("top_logprobs", "exceeds the vocabulary size");
  try {
    request.sampling.validate(vocab);
  } catch (const InvalidArgument& e) {
    throw ApiError(400, e.what());
  }
  const auto prompt_len = int64_t(request.prompt_ids.size());
  if (prompt_len == 0) fail_field(request.kind == ApiKind::kChat ? "messages" : "prompt", "renders to no tokens");
  if (config.max_model_len > 0 && prompt_len >= config.max_model_len) {
    fail_field(request.kind == ApiKind::kChat ? "messages" : "prompt",
               fmt::format("the prompt has {} tokens; the model's context is {} tokens", prompt_len, config.max_model_len));
  }
  if (!request.max_tokens) {
    int64_t fallback = request.kind == ApiKind::kCompletions ? 16 : config.default_max_tokens;
    request.max_tokens = config.max_model_len > 0 ? std::min(fallback, config.max_model_len - prompt_len) : fallback;
  } else if (config.max_model_len > 0 && prompt_len + *request.max_tokens > config.max_model_len) {
    fail_field("max_tokens", fmt::format("prompt ({} tokens) + max_tokens ({}) exceeds the model's context of {} tokens",
                                         prompt_len, *request.max_tokens, config.max_model_len));
  }
}

}  // namespace lemma::server
