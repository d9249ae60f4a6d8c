// Perplexity of a token sequence by llama.cpp's method (llama-perplexity): the tokens are cut into
// chunks of `context` tokens, the first token of each chunk is replaced by BOS, every chunk runs
// from an empty cache at positions 0..context-1, and only the second half is scored (logits at
// positions context/2 .. context-2 predict the next token). PPL = exp(mean NLL). Thread-safe for
// distinct calls (each uses its own cache and workspace).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <vector>

#include "lemma/kv/streaming_window.h"
#include "lemma/model/model.h"

namespace lemma {

struct PerplexityOptions {
  int64_t context = 512;                 // tokens per chunk (llama-perplexity -c)
  std::optional<int32_t> bos_token_id;   // overwrites each chunk's first token; nullopt = keep it
  int num_threads = 1;                   // threads per forward (ForwardWorkspace)
  KvDtype kv_dtype = KvDtype::kF32;      // KV cache element type (G23)
  // Called after each chunk with (chunk index, number of chunks, running perplexity).
  std::function<void(int64_t, int64_t, double)> on_chunk;
};

struct PerplexityResult {
  double perplexity = 0.0;
  std::vector<double> chunk_mean_nll;  // [num_chunks], natural log
  int64_t num_chunks = 0;
  int64_t num_scored_tokens = 0;
};

// Attention sinks (G10): `tokens` (the tokenised text, BOS first) read as ONE stream through
// `streaming` (kv/streaming_window.h), W tokens per forward, every token after the first scored
// (from its predecessor's logits); chunk_mean_nll per consecutive options.context scored tokens
// (the last chunk may be shorter). Shows whether perplexity holds far past the model's context;
// bos_token_id is not used. Throws InvalidArgument for
// fewer than 2 tokens or a window streaming_window_error() refuses.
PerplexityResult compute_streaming_perplexity(const Model& model, std::span<const int32_t> tokens,
                                              const StreamingWindow& streaming, const PerplexityOptions& options);

// -log softmax(logits)[target], in double.
double negative_log_likelihood(std::span<const float> logits, int32_t target);

// `tokens` is the whole tokenised text (with its leading BOS, as llama.cpp tokenises it).
// Throws InvalidArgument when context < 4 or fewer than `context` tokens are given.
PerplexityResult compute_perplexity(const Model& model, std::span<const int32_t> tokens,
                                    const PerplexityOptions& options);

}  // namespace lemma
