// docs/grafana/lemma-dashboard.json queries only metrics the server exposes: every lemma_* name in
// its expressions appears as a sample in /metrics (of a MoE model's server, which has them all).
#include <fstream>
#include <regex>
#include <set>

#include "server_fixture.h"

namespace lemma::server::testing {
namespace {

using nlohmann::json;

void collect_queries(const json& node, std::vector<std::string>& out) {
  if (node.is_object()) {
    for (const auto& [key, value] : node.items()) {
      if ((key == "expr" || key == "definition") && value.is_string()) out.push_back(value.get<std::string>());
      collect_queries(value, out);
    }
  } else if (node.is_array()) {
    for (const json& x : node) collect_queries(x, out);
  }
}

std::set<std::string> sample_names(const std::string& metrics) {
  std::set<std::string> names;
  std::istringstream in(metrics);
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    names.insert(line.substr(0, line.find_first_of("{ ")));
  }
  return names;
}

TEST_F(ServerTest, DashboardQueriesOnlyExposedMetrics) {
  engine_.moe_stats = true;
  start();
  ASSERT_EQ(http_request(port_, "GET", "/v1/models").status, 200);  // labelled series appear once counted
  auto metrics = http_request(port_, "GET", "/metrics");
  ASSERT_EQ(metrics.status, 200);
  const std::set<std::string> exposed = sample_names(metrics.body);

  std::ifstream file(LEMMA_DOCS_DIR "/grafana/lemma-dashboard.json");
  ASSERT_TRUE(file) << "missing " LEMMA_DOCS_DIR "/grafana/lemma-dashboard.json";
  const json dashboard = json::parse(file);
  std::vector<std::string> queries;
  collect_queries(dashboard, queries);
  ASSERT_GE(queries.size(), 14u);
  const std::regex name("lemma_[a-z0-9_]+");
  std::set<std::string> queried;
  for (const std::string& q : queries) {
    for (auto it = std::sregex_iterator(q.begin(), q.end(), name); it != std::sregex_iterator(); ++it) queried.insert(it->str());
  }
  for (const std::string& m : queried) EXPECT_TRUE(exposed.count(m)) << m << " is queried by the dashboard but not in /metrics";
  // The panels the operators asked for are there.
  for (const char* m : {"lemma_http_requests_total", "lemma_time_to_first_token_seconds_bucket",
                        "lemma_time_per_output_token_seconds_bucket", "lemma_requests_running", "lemma_requests_waiting",
                        "lemma_kv_blocks_used", "lemma_prefix_cache_hits_total", "lemma_spec_accepted_tokens_total",
                        "lemma_moe_load_imbalance_bucket"})
    EXPECT_TRUE(queried.count(m)) << m;
  EXPECT_FALSE(exposed.count("lemma_nonexistent_metric"));
}

}  // namespace
}  // namespace lemma::server::testing
