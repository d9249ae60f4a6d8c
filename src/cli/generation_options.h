// Command-line options shared by `generate` and `chat`: sampling, length, threads, weights loading,
// KV cache dtype.
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <optional>

#include "cli/speculative_option.h"
#include "cli/streaming_option.h"
#include "lemma/engine/generate.h"

namespace lemma::cli {

// 0 (the default of --threads) = one thread per core.
int resolve_threads(int requested);

struct SamplingFlags {
  int64_t max_tokens = 128;
  float temperature = 0.8f;
  int32_t top_k = 40;
  float top_p = 0.95f;
  float min_p = 0.05f;
  float repetition_penalty = 1.0f;
  std::optional<uint64_t> seed;
  bool ignore_eos = false;
  int threads = 0;
  std::string load = "lazy";
  std::string kv_cache_dtype = "auto";
  SpeculativeFlags speculative;
  StreamingFlags streaming;  // attention sinks (G10)

  void add_to(CLI::App* sub);
  // Validated options (throws InvalidArgument naming the flag).
  GenerationOptions to_options(int64_t vocab_size, DType weights) const;
};

// `generate --beams N [--length-penalty X] [--early-stopping]`: beam search (G12) instead of sampling.
struct BeamFlags {
  std::optional<int32_t> beams;  // unset: sample
  float length_penalty = 1.0f;
  bool early_stopping = false;

  void add_to(CLI::App* sub);
  // Sets options.sampling.beam_search when --beams is given (throws InvalidArgument naming the flag).
  void apply(GenerationOptions& options) const;
};

}  // namespace lemma::cli
