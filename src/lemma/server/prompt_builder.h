// Turns a ParsedCompletion into prompt token ids: completions tokenise the prompt text (with the
// model's BOS rules, never reading special tokens); chat renders the messages with the chat
// template (the model's, else lemma's default ChatML, tokenizer/jinja/default_chat_template.h)
// and reads special tokens only in the template's own text (Tokenizer::encode_spans), unless
// ServerConfig::allow_special_tokens_in_content. A text too long for the context whatever its
// tokens (bytes / Tokenizer::max_token_bytes()) is refused before it is tokenised. Also fixes
// max_tokens against the context length. Stateless; thread-safe.
#pragma once

#include <optional>

#include "lemma/server/openai_request.h"
#include "lemma/tokenizer/jinja/chat_template.h"
#include "lemma/tokenizer/tokenizer.h"

namespace lemma::server {

// Renders the chat prompt (request text marked); throws ApiError(400) when the template rejects
// the messages.
MarkedText render_chat_prompt(const ParsedCompletion& request, const Tokenizer& tokenizer,
                              const ChatTemplate& chat_template);

// The chat prompt's token ids (after the byte bound below, field "messages").
std::vector<int32_t> tokenize_chat_prompt(const ParsedCompletion& request, const Tokenizer& tokenizer,
                                          const ChatTemplate& chat_template, const ServerConfig& config);

// Throws the too-long ApiError(400) on `field` when a text of `bytes` bytes has at least
// config.max_model_len tokens whatever it says: cheap, so it runs before tokenising.
void check_prompt_bytes(size_t bytes, const Tokenizer& tokenizer, const ServerConfig& config, const std::string& field);

// Fills request.prompt_ids (and validates ids, logit_bias, stop_token_ids against the vocabulary,
// and prompt + max_tokens against config.max_model_len); sets request.max_tokens when unset.
// Throws ApiError(400) naming the field.
void build_prompt(ParsedCompletion& request, const Tokenizer& tokenizer, const ChatTemplate& chat_template,
                  const ServerConfig& config);

}  // namespace lemma::server
