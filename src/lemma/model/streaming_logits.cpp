#include "lemma/model/streaming_logits.h"

#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>

#include "lemma/base/error.h"
#include "lemma/model/kv_cache.h"

namespace lemma {

StreamingLogits stream_sequence(const Model& model, std::span<const int32_t> tokens, const StreamingWindow& streaming,
                                int64_t step_tokens, int num_threads, KvDtype kv_dtype, const StreamingRowsFn& on_rows) {
  if (tokens.empty()) fail<InvalidArgument>("streaming logits: give at least one token");
  if (step_tokens < 1) fail<InvalidArgument>("streaming logits: step_tokens {} < 1", step_tokens);
  if (!streaming.enabled()) fail<InvalidArgument>("streaming logits: streaming_window must be >= 1, got {}", streaming.window);
  if (const std::string error = streaming_window_error(streaming, model.config().max_position_embeddings);
      !error.empty())
    fail<InvalidArgument>("streaming logits: {}", error);
  constexpr int64_t kBlockSize = 16;
  StreamingLogits out;
  out.block_size = kBlockSize;
  out.cache_blocks = streaming.max_live_blocks(kBlockSize, step_tokens);
  KvCache cache = KvCache::for_model(model.config(), out.cache_blocks, kBlockSize, kv_dtype);
  ForwardWorkspace workspace(num_threads, model.runtime().pin_threads);
  // The sequence's block table grows by one entry per block of tokens; entries of the evicted
  // middle go back to `free_blocks` (-1 in the table) before each step that no longer reads them.
  std::vector<int32_t> table, free_blocks;
  for (int64_t b = out.cache_blocks; b-- > 0;) free_blocks.push_back(static_cast<int32_t>(b));
  const int64_t vocab = model.config().vocab_size;
  const auto n = static_cast<int64_t>(tokens.size());
  std::vector<float> logits(static_cast<size_t>(std::min(step_tokens, n) * vocab));
  int64_t held = 0;
  for (int64_t c = 0; c < n;) {
    const int64_t step = std::min(step_tokens, n - c);
    const int64_t dead_end = std::min<int64_t>(streaming.dead_block_end(c, kBlockSize), std::ssize(table));
    for (int64_t b = streaming.first_dead_block(kBlockSize); b < dead_end; ++b) {
      int32_t& id = table[static_cast<size_t>(b)];
      if (id < 0) continue;
      free_blocks.push_back(id);
      id = -1;
      --held;
    }
    while (std::ssize(table) * kBlockSize < c + step) {
      if (free_blocks.empty())  // max_live_blocks is the bound: never
        throw std::logic_error(fmt::format("streaming logits: the {}-block cache is full", out.cache_blocks));
      table.push_back(free_blocks.back());
      free_blocks.pop_back();
      ++held;
    }
    out.max_held_blocks = std::max(out.max_held_blocks, held);
    ForwardBatch batch;
    batch.sequences.push_back({tokens.subspan(static_cast<size_t>(c), static_cast<size_t>(step)), c, table,
                               LogitsRequest::kAll});
    batch.sequences.back().streaming = streaming;
    const auto rows = std::span(logits).first(static_cast<size_t>(step * vocab));
    model.forward(batch, cache, workspace, rows);
    on_rows(c, rows);
    c += step;
  }
  return out;
}

StreamingLogits streaming_sequence_logits(const Model& model, std::span<const int32_t> tokens,
                                          const StreamingWindow& streaming, int64_t step_tokens, int num_threads,
                                          KvDtype kv_dtype) {
  std::vector<float> all(tokens.size() * static_cast<size_t>(model.config().vocab_size));
  StreamingLogits out = stream_sequence(model, tokens, streaming, step_tokens, num_threads, kv_dtype,
                                        [&](int64_t first, std::span<const float> rows) {
                                          std::copy(rows.begin(), rows.end(),
                                                    all.begin() + first * model.config().vocab_size);
                                        });
  out.logits = std::move(all);
  return out;
}

}  // namespace lemma
