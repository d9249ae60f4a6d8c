// Turns a ParsedCompletion into prompt token ids: completions tokenise the prompt text (with the
// model's BOS rules); chat renders the messages with the chat template (the model's, else
// lemma's default ChatML, tokenizer/jinja/default_chat_template.h) and tokenises the result with
// special-token parsing. Also fixes max_tokens against the context length. Stateless; thread-safe.
#pragma once

#include <optional>

#include "lemma/server/openai_request.h"
#include "lemma/tokenizer/jinja/chat_template.h"
#include "lemma/tokenizer/tokenizer.h"

namespace lemma::server {

// Renders the chat prompt text; throws ApiError(400) when the template rejects the messages.
std::string render_chat_prompt(const ParsedCompletion& request, const Tokenizer& tokenizer,
                               const ChatTemplate& chat_template);

// Fills request.prompt_ids (and validates ids, logit_bias, stop_token_ids against the vocabulary,
// and prompt + max_tokens against config.max_model_len); sets request.max_tokens when unset.
// Throws ApiError(400) naming the field.
void build_prompt(ParsedCompletion& request, const Tokenizer& tokenizer, const ChatTemplate& chat_template,
                  const ServerConfig& config);

}  // namespace lemma::server
