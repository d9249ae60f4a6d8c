#include "lemma/server/lora_handlers.h"

#include "lemma/server/api_error.h"
#include "lemma/server/openai_request.h"

namespace lemma::server {

namespace {

LoraPool& pool_of(ServerContext& ctx) {
  if (!ctx.config.lora_pool)
    throw ApiError(404, "LoRA adapters are not enabled on this server (start it with --enable-lora or --lora-modules)",
                   std::nullopt, "not_found");
  return *ctx.config.lora_pool;
}

std::string string_field(const nlohmann::json& body, const char* field) {
  if (!body.contains(field) || !body.at(field).is_string() || body.at(field).get<std::string>().empty())
    fail_field(field, "must be a non-empty string");
  return body.at(field).get<std::string>();
}

HttpResponse text_response(std::string text) {
  HttpResponse r;
  r.content_type = "text/plain; charset=utf-8";
  r.body = std::move(text);
  return r;
}

}  // namespace

HttpResponse load_lora_adapter(const HttpRequest& request, ServerContext& ctx) {
  LoraPool& pool = pool_of(ctx);
  const nlohmann::json body = parse_json_object(request.body);
  const std::string name = string_field(body, "lora_name");
  const std::string path = string_field(body, "lora_path");
  if (name == ctx.config.served_model_name)
    throw ApiError(400, "The lora_name `" + name + "` is the base model's name.", "lora_name");
  try {
    pool.load(name, path);
  } catch (const InvalidArgument& e) {  // name taken, rank above the limit
    throw ApiError(400, e.what(), "lora_name");
  } catch (const Error& e) {  // missing or malformed files, unsupported modules
    throw ApiError(400, e.what(), "lora_path");
  }
  return text_response("Success: LoRA adapter '" + name + "' added successfully.");
}

HttpResponse unload_lora_adapter(const HttpRequest& request, ServerContext& ctx) {
  LoraPool& pool = pool_of(ctx);
  const nlohmann::json body = parse_json_object(request.body);
  const std::string name = string_field(body, "lora_name");
  try {
    pool.unload(name);
  } catch (const LoraNotFound& e) {
    throw ApiError(404, e.what(), "lora_name", "model_not_found");
  }
  return text_response("Success: LoRA adapter '" + name + "' removed successfully.");
}

std::vector<ojson> lora_model_cards(const ServerContext& ctx) {
  std::vector<ojson> cards;
  if (!ctx.config.lora_pool) return cards;
  for (const LoraModuleInfo& m : ctx.config.lora_pool->list())
    cards.push_back({{"id", m.name}, {"object", "model"}, {"created", ctx.started_unix}, {"owned_by", "lemma"},
                     {"root", m.path.string()}, {"parent", ctx.config.served_model_name}});
  return cards;
}

std::shared_ptr<const LoraAdapter> acquire_lora(LoraPool& pool, const std::string& name) {
  try {
    return pool.acquire(name);
  } catch (const LoraNotFound&) {  // unloaded since the caller looked
    throw ApiError(404, "The model `" + name + "` does not exist.", "model", "model_not_found");
  } catch (const LoraPoolFull& e) {
    throw ApiError(429, e.what(), "model");
  } catch (const Error& e) {  // its files changed since it was loaded
    throw ApiError(500, "LoRA adapter `" + name + "` could not be reloaded: " + e.what(), "model");
  }
}

}  // namespace lemma::server
