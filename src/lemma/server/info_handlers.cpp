#include "lemma/server/handlers.h"

#include "lemma/server/lora_handlers.h"
#include "lemma/server/openai_request.h"
#include "lemma/server/prompt_builder.h"
#include "lemma/server/response_format.h"

namespace lemma::server {

namespace {

ojson model_card(const ServerContext& ctx) {
  ojson m = {{"id", ctx.config.served_model_name}, {"object", "model"}, {"created", ctx.started_unix},
             {"owned_by", "lemma"}};
  if (ctx.config.max_model_len > 0) m["max_model_len"] = ctx.config.max_model_len;
  return m;
}

HttpResponse json_response(const ojson& j) {
  HttpResponse r;
  r.body = dump_json(j);
  return r;
}

HttpResponse tokenize(const HttpRequest& request, ServerContext& ctx) {
  nlohmann::json body = parse_json_object(request.body);
  std::vector<int32_t> ids;
  if (body.contains("messages")) {
    ParsedCompletion chat = parse_completion_request(request.body, ApiKind::kChat, ctx.config);
    ids = tokenize_chat_prompt(chat, ctx.tokenizer, ctx.chat_template, ctx.config);
  } else {
    if (!body.contains("prompt") || !body.at("prompt").is_string()) fail_field("prompt", "must be a string");
    bool add_special = true;
    if (body.contains("add_special_tokens")) {
      if (!body.at("add_special_tokens").is_boolean()) fail_field("add_special_tokens", "must be a boolean");
      add_special = body.at("add_special_tokens").get<bool>();
    }
    const auto& prompt = body.at("prompt").get_ref<const std::string&>();
    check_prompt_bytes(prompt.size(), ctx.tokenizer, ctx.config, "prompt");
    ids = ctx.tokenizer.encode(prompt, add_special, false);
  }
  ojson out = {{"count", ids.size()}, {"max_model_len", ctx.config.max_model_len}, {"tokens", ids}};
  return json_response(out);
}

HttpResponse detokenize(const HttpRequest& request, ServerContext& ctx) {
  nlohmann::json body = parse_json_object(request.body);
  if (!body.contains("tokens") || !body.at("tokens").is_array()) fail_field("tokens", "must be an array of token ids");
  std::vector<int32_t> ids;
  for (const auto& t : body.at("tokens")) {
    if (!t.is_number_integer() || t.get<int64_t>() < 0 || t.get<int64_t>() >= ctx.tokenizer.vocab_size()) {
      fail_field("tokens", fmt::format("{} is not a token id in [0, {})", t.dump(), ctx.tokenizer.vocab_size()));
    }
    ids.push_back(t.get<int32_t>());
  }
  return json_response(ojson{{"prompt", ctx.tokenizer.decode(ids)}});
}

}  // namespace

HttpResponse error_response(const ApiError& error) {
  HttpResponse r;
  r.status = error.status();
  r.body = error.body();
  return r;
}

HttpResponse handle_info(const RouteMatch& route, const HttpRequest& request, ServerContext& ctx) {
  switch (route.route) {
    case Route::kModels: {
      ojson data = ojson::array({model_card(ctx)});
      for (ojson& card : lora_model_cards(ctx)) data.push_back(std::move(card));
      return json_response(ojson{{"object", "list"}, {"data", std::move(data)}});
    }
    case Route::kModel:
      if (route.model == ctx.config.served_model_name) return json_response(model_card(ctx));
      for (ojson& card : lora_model_cards(ctx))
        if (card["id"] == route.model) return json_response(card);
      throw ApiError(404, "The model `" + route.model + "` does not exist.", "model", "model_not_found");
    case Route::kLoadLora: return load_lora_adapter(request, ctx);
    case Route::kUnloadLora: return unload_lora_adapter(request, ctx);
    case Route::kHealth: {
      HttpResponse r = json_response(ojson{{"status", ctx.draining ? "draining" : "ok"}});
      if (ctx.draining) r.status = 503;
      return r;
    }
    case Route::kMetrics: {
      HttpResponse r;
      r.content_type = "text/plain; version=0.0.4; charset=utf-8";
      r.body = ctx.metrics.render(ctx.engine.stats());
      return r;
    }
    case Route::kTokenize: return tokenize(request, ctx);
    case Route::kDetokenize: return detokenize(request, ctx);
    default: throw ApiError(404, "not found: " + request.target, std::nullopt, "not_found");
  }
}

}  // namespace lemma::server
