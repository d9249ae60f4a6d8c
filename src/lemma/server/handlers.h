// Endpoint handlers over Beast-free HttpRequest/HttpResponse values: the informational endpoints
// (models, health, metrics, tokenize, detokenize) answer directly; completions and chat build a
// CompletionCall that the connection then drives. Errors are thrown as ApiError.
// Thread-safe: they read the shared ServerContext only through its thread-safe members.
#pragma once

#include <memory>

#include "lemma/server/api_error.h"
#include "lemma/server/completion_call.h"
#include "lemma/server/embedding_call.h"
#include "lemma/server/http_types.h"
#include "lemma/server/router.h"
#include "lemma/server/server_context.h"

namespace lemma::server {

// GET /v1/models, /v1/models/{name}, /health, /metrics; POST /tokenize, /detokenize.
HttpResponse handle_info(const RouteMatch& route, const HttpRequest& request, ServerContext& ctx);

// POST /v1/completions, /v1/chat/completions, /v1/responses, /v1/messages: parse, validate, tokenise. The caller submits
// call->engine_request() with call->buffer() to the engine.
std::unique_ptr<CompletionCall> start_completion(const RouteMatch& route, const HttpRequest& request,
                                                 ServerContext& ctx, const std::string& request_id,
                                                 Clock::time_point arrival);

// Shared by every generation endpoint once its parser made `parsed`: the model / LoRA adapter,
// the prompt, the grammar, the call (completion_handler.cpp).
std::unique_ptr<CompletionCall> start_parsed_completion(ParsedCompletion parsed, ServerContext& ctx,
                                                        const std::string& request_id, Clock::time_point arrival);

// POST /v1/responses (responses_handler.cpp) and POST /v1/messages (messages_handler.cpp): the
// same calls with their output written by a CallEncoder. start_completion dispatches to them.
std::unique_ptr<CompletionCall> start_response(const HttpRequest& request, ServerContext& ctx,
                                               const std::string& request_id, Clock::time_point arrival);
std::unique_ptr<CompletionCall> start_message(const HttpRequest& request, ServerContext& ctx,
                                              const std::string& request_id, Clock::time_point arrival);

// POST /v1/embeddings (embeddings_handler.cpp): parse, tokenise, validate. The caller submits the
// call's engine requests and waits for their vectors.
std::unique_ptr<EmbeddingCall> start_embeddings(const HttpRequest& request, ServerContext& ctx, const std::string& id);

HttpResponse error_response(const ApiError& error);

}  // namespace lemma::server
