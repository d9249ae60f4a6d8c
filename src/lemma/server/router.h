// Router: maps (method, path) to one of the server's endpoints, with the low-cardinality label
// used in metrics, and reports 404 (unknown path) vs 405 (known path, wrong method). Pure.
#pragma once

#include <string>

namespace lemma::server {

enum class Route { kCompletions, kChat, kModels, kModel, kHealth, kMetrics, kTokenize, kDetokenize, kLoadLora,
                   kUnloadLora, kResponses, kMessages, kEmbeddings, kNotFound, kMethodNotAllowed };

struct RouteMatch {
  Route route = Route::kNotFound;
  std::string label;    // metrics label: completions, chat_completions, models, ..., other
  std::string allow;    // for 405: the method the path takes
  std::string model;    // kModel: the name in /v1/models/{name}
};

RouteMatch match_route(const std::string& method, const std::string& path);

// Whether the endpoint needs the API key (everything but /health and /metrics).
bool route_needs_auth(Route route);

// Whether the endpoint generates text through a CompletionCall (completions, chat, responses, messages).
bool is_generation_route(Route route);

}  // namespace lemma::server
