// The LoRA endpoints' routes (G29): vLLM's paths, POST only, behind the API key like the rest of /v1.
#include <gtest/gtest.h>

#include "lemma/server/router.h"

namespace lemma::server {
namespace {

TEST(LoraRoutes, LoadAndUnloadArePostEndpoints) {
  EXPECT_EQ(match_route("POST", "/v1/load_lora_adapter").route, Route::kLoadLora);
  EXPECT_EQ(match_route("POST", "/v1/unload_lora_adapter/").route, Route::kUnloadLora);
  EXPECT_EQ(match_route("POST", "/v1/load_lora_adapter").label, "load_lora_adapter");
  const auto wrong = match_route("GET", "/v1/unload_lora_adapter");
  EXPECT_EQ(wrong.route, Route::kMethodNotAllowed);
  EXPECT_EQ(wrong.allow, "POST");
  EXPECT_TRUE(route_needs_auth(Route::kLoadLora));
  EXPECT_TRUE(route_needs_auth(Route::kUnloadLora));
}

}  // namespace
}  // namespace lemma::server
