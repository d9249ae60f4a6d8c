// POST /v1/embeddings: parse, resolve the model (or LoRA adapter), tokenise each input (as a
// completions prompt: the model's BOS rules, no special-token text) and check it fits the context;
// the session then runs the EmbeddingCall on the engine.
#include <fmt/format.h>

#include "lemma/server/embedding_call.h"
#include "lemma/server/handlers.h"
#include "lemma/server/lora_handlers.h"
#include "lemma/server/prompt_builder.h"

namespace lemma::server {

std::unique_ptr<EmbeddingCall> start_embeddings(const HttpRequest& request, ServerContext& ctx, const std::string& id) {
  ParsedEmbeddings parsed = parse_embeddings_request(request.body);
  std::shared_ptr<const LoraAdapter> lora;
  if (!parsed.model.empty() && parsed.model != ctx.config.served_model_name) {
    if (!ctx.config.lora_pool || !ctx.config.lora_pool->contains(parsed.model))
      throw ApiError(404, "The model `" + parsed.model + "` does not exist.", "model", "model_not_found");
    lora = acquire_lora(*ctx.config.lora_pool, parsed.model);
  }
  const int32_t vocab = ctx.tokenizer.vocab_size();
  std::vector<std::vector<int32_t>> prompts;
  for (size_t i = 0; i < parsed.inputs.size(); ++i) {
    const std::string field = parsed.inputs.size() == 1 ? "input" : fmt::format("input[{}]", i);
    std::vector<int32_t> ids;
    if (const auto* text = std::get_if<std::string>(&parsed.inputs[i])) {
      check_prompt_bytes(text->size(), ctx.tokenizer, ctx.config, field);
      ids = ctx.tokenizer.encode(*text, /*add_special=*/true, /*parse_special=*/false);
    } else {
      ids = std::get<std::vector<int32_t>>(parsed.inputs[i]);
    }
    for (int32_t t : ids)
      if (t >= vocab) fail_field(field, fmt::format("token id {} is outside the vocabulary [0, {})", t, vocab));
    if (ids.empty()) fail_field(field, "tokenises to no tokens");
    // The pooling request samples one (discarded) token after its prompt.
    if (ctx.config.max_model_len > 0 && int64_t(ids.size()) >= ctx.config.max_model_len)
      fail_field(field, fmt::format("has {} tokens; the model's context is {} tokens", ids.size(), ctx.config.max_model_len));
    prompts.push_back(std::move(ids));
  }
  std::string model = lora ? parsed.model : ctx.config.served_model_name;
  return std::make_unique<EmbeddingCall>(id, std::move(model), std::move(prompts), ctx.config.pooling, parsed.base64,
                                         std::move(lora));
}

}  // namespace lemma::server
