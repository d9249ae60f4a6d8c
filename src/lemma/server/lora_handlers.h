// The LoRA side of the HTTP API (G29), as vLLM serves it: POST /v1/load_lora_adapter
// {"lora_name", "lora_path"}, POST /v1/unload_lora_adapter {"lora_name"}, the adapters' cards in
// /v1/models, and the pool's errors as API errors (unknown name 404, bad files or a rank above
// --max-lora-rank 400, every adapter slot in use 429). Thread-safe (the pool is).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "lemma/engine/lora_pool.h"
#include "lemma/server/http_types.h"
#include "lemma/server/response_format.h"
#include "lemma/server/server_context.h"

namespace lemma::server {

HttpResponse load_lora_adapter(const HttpRequest& request, ServerContext& ctx);
HttpResponse unload_lora_adapter(const HttpRequest& request, ServerContext& ctx);

// One card per registered adapter: {"id": name, "object": "model", "parent": the served model, "root": path, ...}.
std::vector<ojson> lora_model_cards(const ServerContext& ctx);

// pool.acquire(name) with its errors as ApiErrors.
std::shared_ptr<const LoraAdapter> acquire_lora(LoraPool& pool, const std::string& name);

}  // namespace lemma::server
