#include "lemma/server/router.h"

#include <array>

namespace lemma::server {

namespace {
struct Entry {
  const char* path;
  const char* method;
  Route route;
  const char* label;
};
constexpr std::array<Entry, 13> kRoutes = {{
    {"/v1/completions", "POST", Route::kCompletions, "completions"},
    {"/v1/chat/completions", "POST", Route::kChat, "chat_completions"},
    {"/v1/models", "GET", Route::kModels, "models"},
    {"/health", "GET", Route::kHealth, "health"},
    {"/metrics", "GET", Route::kMetrics, "metrics"},
    {"/tokenize", "POST", Route::kTokenize, "tokenize"},
    {"/detokenize", "POST", Route::kDetokenize, "detokenize"},
    {"/v1/load_lora_adapter", "POST", Route::kLoadLora, "load_lora_adapter"},
    {"/v1/unload_lora_adapter", "POST", Route::kUnloadLora, "unload_lora_adapter"},
    {"/v1/responses", "POST", Route::kResponses, "responses"},
    {"/v1/messages", "POST", Route::kMessages, "messages"},
    {"/v1/embeddings", "POST", Route::kEmbeddings, "embeddings"},
    {"/v1/models/", "GET", Route::kModel, "models"},  // prefix
}};
}  // namespace

RouteMatch match_route(const std::string& method, const std::string& path) {
  std::string p = path;
  if (p.size() > 1 && p.back() == '/' && p != "/v1/models/") p.pop_back();
  for (const Entry& e : kRoutes) {
    bool prefix = e.route == Route::kModel;
    bool hit = prefix ? (p.rfind(e.path, 0) == 0 && p.size() > std::string(e.path).size()) : p == e.path;
    if (!hit) continue;
    RouteMatch m;
    m.label = e.label;
    if (method != e.method && !(method == "HEAD" && std::string(e.method) == "GET")) {
      m.route = Route::kMethodNotAllowed;
      m.allow = e.method;
      return m;
    }
    m.route = e.route;
    if (prefix) m.model = p.substr(std::string(e.path).size());
    return m;
  }
  return RouteMatch{Route::kNotFound, "other", "", ""};
}

bool route_needs_auth(Route route) { return route != Route::kHealth && route != Route::kMetrics; }

bool is_generation_route(Route route) {
  return route == Route::kCompletions || route == Route::kChat || route == Route::kResponses || route == Route::kMessages;
}

}  // namespace lemma::server
