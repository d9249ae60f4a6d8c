// POST /v1/responses: OpenAI's Responses API over the one generation path (CompletionCall with a
// ResponsesEncoder); the conversation of previous_response_id comes from the context's store.
#include <ctime>

#include "lemma/server/handlers.h"
#include "lemma/server/responses_request.h"
#include "lemma/server/responses_response.h"

namespace lemma::server {

std::unique_ptr<CompletionCall> start_response(const HttpRequest& request, ServerContext& ctx,
                                               const std::string& request_id, Clock::time_point arrival) {
  ParsedResponseRequest parsed = parse_responses_request(request.body, ctx.config, *ctx.responses);
  std::string model = parsed.completion.model.empty() ? ctx.config.served_model_name : parsed.completion.model;
  ResponseEcho echo = response_echo(parsed, request_id, std::move(model), int64_t(std::time(nullptr)));
  auto encoder = std::make_unique<ResponsesEncoder>(std::move(echo), parsed.store ? ctx.responses : nullptr,
                                                    std::move(parsed.conversation));
  auto call = start_parsed_completion(std::move(parsed.completion), ctx, request_id, arrival);
  call->set_encoder(std::move(encoder));
  return call;
}

}  // namespace lemma::server
