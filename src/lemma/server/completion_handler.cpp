#include "lemma/server/handlers.h"

#include <ctime>

#include "lemma/server/lora_handlers.h"
#include "lemma/server/prompt_builder.h"
#include "lemma/server/tool_call_grammar.h"

namespace lemma::server {

std::unique_ptr<CompletionCall> start_completion(const RouteMatch& route, const HttpRequest& request,
                                                 ServerContext& ctx, const std::string& request_id,
                                                 Clock::time_point arrival) {
  if (route.route == Route::kResponses) return start_response(request, ctx, request_id, arrival);
  if (route.route == Route::kMessages) return start_message(request, ctx, request_id, arrival);
  const ApiKind kind = route.route == Route::kChat ? ApiKind::kChat : ApiKind::kCompletions;
  return start_parsed_completion(parse_completion_request(request.body, kind, ctx.config), ctx, request_id, arrival);
}

std::unique_ptr<CompletionCall> start_parsed_completion(ParsedCompletion parsed, ServerContext& ctx,
                                                        const std::string& request_id, Clock::time_point arrival) {
  // `model` names the base model or a LoRA adapter of the pool (G29); the adapter is held from here.
  std::shared_ptr<const LoraAdapter> lora;
  if (!parsed.model.empty() && parsed.model != ctx.config.served_model_name) {
    if (!ctx.config.lora_pool || !ctx.config.lora_pool->contains(parsed.model))
      throw ApiError(404, "The model `" + parsed.model + "` does not exist.", "model", "model_not_found");
    lora = acquire_lora(*ctx.config.lora_pool, parsed.model);
  }
  build_prompt(parsed, ctx.tokenizer, ctx.chat_template, ctx.config);
  if (parsed.wants_tool_calls) parsed.tool_format = ctx.tool_format;
  if (parsed.output_constraint.kind != OutputConstraintSpec::Kind::kNone) {
    if (parsed.forced_tool) throw ApiError(400, "tool_choice forces a call: it cannot be combined with " + parsed.output_constraint.field, "tool_choice");
    parsed.sampling.constraint = compile_output_constraint(parsed.output_constraint, ctx.grammar_vocabulary());
  } else if (parsed.wants_tool_calls) {
    // Forced calls, or (tool_choice auto) free text until the model opens a call, then well-formed calls.
    parsed.sampling.constraint =
        parsed.forced_tool ? compile_forced_tool_call(parsed.tools, *parsed.forced_tool, ctx.tool_syntax,
                                                      ctx.grammar_vocabulary())
                           : compile_lazy_tool_calls(parsed.tools, ctx.tool_syntax, parsed.parallel_tool_calls,
                                                     ctx.grammar_vocabulary());
    parsed.tool_calls_constrained = parsed.sampling.constraint != nullptr;
  }
  ResponseIds ids{request_id, lora ? parsed.model : ctx.config.served_model_name, int64_t(std::time(nullptr))};
  auto call = std::make_unique<CompletionCall>(std::move(parsed), ctx.tokenizer, std::move(ids), ctx.config, ctx.metrics,
                                               arrival);
  call->set_lora(std::move(lora));
  return call;
}

}  // namespace lemma::server
