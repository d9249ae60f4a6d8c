// The prompts of a serving benchmark: fixed or random lengths and shared-prefix workloads, made
// from a seeded list of common English words (one word is about one token in GPT-2, Llama and Qwen
// tokenizers, so lengths are targets in tokens, not exact counts). Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace lemma::bench::serving {

struct WorkloadSpec {
  int64_t num_prompts = 100;
  int64_t input_len = 256;          // words of each request's own part
  int64_t output_len = 128;         // max_tokens
  double range_ratio = 0.0;         // lengths uniform in [len * (1 - r), len * (1 + r)]; 0 = fixed
  int64_t shared_prefix_len = 0;    // words of each common prefix; 0 = no shared prefixes
  int64_t num_prefixes = 1;         // distinct common prefixes (request i uses prefix i % K)
  double shared_prefix_fraction = 1.0;  // share of requests that start with a common prefix
  uint64_t seed = 0;
};

struct WorkItem {
  std::string prompt;
  int64_t input_words = 0;  // words in `prompt` (prefix included): the input-length estimate
  int64_t max_tokens = 0;
  int prefix_group = -1;    // which common prefix the prompt starts with; -1 = none
};

// Throws InvalidArgument naming the option for lengths < 1 (a prefix < 0), a ratio outside [0, 1),
// or a fraction outside [0, 1].
void check_workload(const WorkloadSpec& spec);
// Checks `spec` first (as above).
std::vector<WorkItem> make_workload(const WorkloadSpec& spec);

// `count` seeded words joined by single spaces (no leading or trailing space).
std::string seeded_words(int64_t count, uint64_t seed);

}  // namespace lemma::bench::serving
