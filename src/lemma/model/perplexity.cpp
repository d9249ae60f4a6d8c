#include "lemma/model/perplexity.h"

#include <cmath>

#include "lemma/base/error.h"
#include "lemma/model/streaming_logits.h"

namespace lemma {

double negative_log_likelihood(std::span<const float> logits, int32_t target) {
  float max_logit = logits[0];
  for (float v : logits) max_logit = std::max(max_logit, v);
  double sum = 0.0;
  for (float v : logits) sum += std::exp(static_cast<double>(v) - max_logit);
  return std::log(sum) - (static_cast<double>(logits[static_cast<size_t>(target)]) - max_logit);
}

PerplexityResult compute_streaming_perplexity(const Model& model, std::span<const int32_t> tokens,
                                              const StreamingWindow& streaming, const PerplexityOptions& options) {
  if (tokens.size() < 2) fail<InvalidArgument>("perplexity: {} tokens, a stream needs at least 2", tokens.size());
  if (options.context < 1) fail<InvalidArgument>("perplexity: context must be at least 1, got {}", options.context);
  const auto vocab = static_cast<size_t>(model.config().vocab_size);
  const auto n = static_cast<int64_t>(tokens.size());
  PerplexityResult result;
  result.num_chunks = (n - 1 + options.context - 1) / options.context;
  double total_nll = 0.0, chunk_nll = 0.0;
  stream_sequence(model, tokens, streaming, streaming.window, options.num_threads, options.kv_dtype,
                  [&](int64_t first, std::span<const float> rows) {
                    for (size_t r = 0; r < rows.size() / vocab; ++r) {
                      const int64_t position = first + static_cast<int64_t>(r);
                      if (position + 1 >= n) break;
                      const double nll = negative_log_likelihood(rows.subspan(r * vocab, vocab),
                                                                 tokens[static_cast<size_t>(position + 1)]);
                      total_nll += nll;
                      chunk_nll += nll;
                      ++result.num_scored_tokens;
                      const int64_t in_chunk = result.num_scored_tokens - options.context * std::ssize(result.chunk_mean_nll);
                      if (in_chunk == options.context || position + 2 == n) {
                        result.chunk_mean_nll.push_back(chunk_nll / static_cast<double>(in_chunk));
                        chunk_nll = 0.0;
                        if (options.on_chunk)
                          options.on_chunk(std::ssize(result.chunk_mean_nll) - 1, result.num_chunks,
                                           std::exp(total_nll / static_cast<double>(result.num_scored_tokens)));
                      }
                    }
                  });
  result.perplexity = std::exp(total_nll / static_cast<double>(result.num_scored_tokens));
  return result;
}

PerplexityResult compute_perplexity(const Model& model, std::span<const int32_t> tokens,
                                    const PerplexityOptions& options) {
  const int64_t ctx = options.context;
  if (ctx < 4) fail<InvalidArgument>("perplexity: context must be at least 4, got {}", ctx);
  const int64_t num_chunks = static_cast<int64_t>(tokens.size()) / ctx;
  if (num_chunks == 0)
    fail<InvalidArgument>("perplexity: {} tokens are fewer than one context of {}", tokens.size(), ctx);
  const int64_t vocab = model.config().vocab_size;
  const int64_t first_scored = ctx / 2;

  constexpr int64_t kBlockSize = 16;
  KvCache cache =
      KvCache::for_model(model.config(), (ctx + kBlockSize - 1) / kBlockSize, kBlockSize, options.kv_dtype);
  const std::vector<int32_t> table = contiguous_block_table(ctx, kBlockSize);
  ForwardWorkspace workspace(options.num_threads, model.runtime().pin_threads);
  std::vector<float> logits(static_cast<size_t>(ctx * vocab));
  std::vector<int32_t> chunk(static_cast<size_t>(ctx));

  PerplexityResult result;
  result.num_chunks = num_chunks;
  double total_nll = 0.0;
  for (int64_t c = 0; c < num_chunks; ++c) {
    std::copy_n(tokens.begin() + c * ctx, ctx, chunk.begin());
    if (options.bos_token_id) chunk[0] = *options.bos_token_id;
    ForwardBatch batch;
    batch.sequences.push_back({chunk, 0, table, LogitsRequest::kAll});
    model.forward(batch, cache, workspace, logits);
    double chunk_nll = 0.0;
    for (int64_t i = first_scored; i < ctx - 1; ++i) {
      const auto row = std::span<const float>(logits).subspan(static_cast<size_t>(i * vocab), static_cast<size_t>(vocab));
      chunk_nll += negative_log_likelihood(row, chunk[static_cast<size_t>(i + 1)]);
    }
    const int64_t scored = ctx - 1 - first_scored;
    total_nll += chunk_nll;
    result.num_scored_tokens += scored;
    result.chunk_mean_nll.push_back(chunk_nll / static_cast<double>(scored));
    if (options.on_chunk)
      options.on_chunk(c, num_chunks, std::exp(total_nll / static_cast<double>(result.num_scored_tokens)));
  }
  result.perplexity = std::exp(total_nll / static_cast<double>(result.num_scored_tokens));
  return result;
}

}  // namespace lemma
