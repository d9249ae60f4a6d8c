// POST /v1/messages: Anthropic's Messages API over the one generation path (CompletionCall with a
// MessagesEncoder). Errors become Anthropic's shape in the session (to_anthropic_error).
#include "lemma/server/anthropic_request.h"
#include "lemma/server/anthropic_response.h"
#include "lemma/server/handlers.h"

namespace lemma::server {

std::unique_ptr<CompletionCall> start_message(const HttpRequest& request, ServerContext& ctx,
                                              const std::string& request_id, Clock::time_point arrival) {
  ParsedCompletion parsed = parse_messages_request(request.body, ctx.config);
  std::string model = parsed.model.empty() ? ctx.config.served_model_name : parsed.model;
  auto call = start_parsed_completion(std::move(parsed), ctx, request_id, arrival);
  call->set_encoder(std::make_unique<MessagesEncoder>(request_id, std::move(model)));
  return call;
}

}  // namespace lemma::server
