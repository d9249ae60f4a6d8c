// Shared helpers for engine tests: the real stories260K model (sharp logits, 512-token vocabulary),
// an EngineConfig builder, and a driver that runs an Engine to completion collecting each request's
// tokens and the logits each token was sampled from.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <vector>

#include "lemma/engine/engine.h"
#include "support/shared_data.h"

namespace lemma::testing {

inline std::filesystem::path stories_path() { return shared_data("models/stories260K/stories260K.gguf"); }

// Loaded once per test binary.
inline const Model& stories_model() {
  static const Model model = Model::open(stories_path(), LoadMode::kCopy);
  return model;
}

inline EngineConfig engine_config(int32_t num_blocks, int64_t token_budget = 256, int32_t max_seqs = 16) {
  EngineConfig c;
  c.scheduler.max_num_batched_tokens = token_budget;
  c.scheduler.max_num_seqs = max_seqs;
  c.scheduler.max_model_len = 256;
  c.kv.num_device_blocks = num_blocks;
  c.kv.block_size = 16;
  c.kv.watermark = 0.0;
  c.keep_logits = true;
  return c;
}

struct Finished {
  std::vector<int32_t> tokens;
  std::vector<std::vector<float>> logits;  // the logits each token was sampled from
  RequestStatus status = RequestStatus::kRunning;
  int64_t cached_tokens = 0;
  int finish_count = 0;
};

// Adds a step's outputs (and the logits each new token was sampled from) to `seen`.
inline void collect(const StepReport& report, const Engine& engine, std::map<RequestId, Finished>& seen) {
  for (const auto& o : report.outputs) {
    Finished& f = seen[o.output.id];
    for (int32_t t : o.output.new_token_ids) {
      f.tokens.push_back(t);
      const auto l = engine.runner().last_logits(o.output.id);
      f.logits.emplace_back(l.begin(), l.end());
    }
    if (o.output.finished()) {
      f.status = o.output.status;
      f.cached_tokens = o.output.num_cached_tokens;
      ++f.finish_count;
    }
  }
}

// Steps `engine` until no request is left; max_steps guards against a hang.
inline std::map<RequestId, Finished> run_to_completion(Engine& engine, std::map<RequestId, Finished> seen = {},
                                                       int max_steps = 10000) {
  for (int i = 0; i < max_steps && engine.has_unfinished_requests(); ++i) collect(engine.step(), engine, seen);
  return seen;
}

inline RequestOptions greedy(int64_t max_tokens) {
  RequestOptions o;
  o.sampling.temperature = 0.0f;
  o.stop.max_tokens = max_tokens;
  o.stop.ignore_eos = true;
  return o;
}

// Deterministic pseudo-random prompt of `n` tokens in [1, 512).
inline std::vector<int32_t> prompt_of(int64_t n, uint32_t seed) {
  std::vector<int32_t> p;
  uint32_t x = seed * 2654435761u + 12345u;
  for (int64_t i = 0; i < n; ++i) {
    x = x * 1664525u + 1013904223u;
    p.push_back(static_cast<int32_t>(1 + (x >> 8) % 511));
  }
  return p;
}

}  // namespace lemma::testing
