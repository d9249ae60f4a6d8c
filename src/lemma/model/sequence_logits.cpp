#include "lemma/model/sequence_logits.h"

#include "lemma/base/error.h"
#include "lemma/model/kv_cache.h"

namespace lemma {

std::vector<float> sequence_logits(const Model& model, std::span<const int32_t> tokens, int num_threads,
                                   KvDtype kv_dtype) {
  if (tokens.empty()) fail<InvalidArgument>("sequence_logits: give at least one token");
  constexpr int64_t kBlockSize = 16;
  const auto n = static_cast<int64_t>(tokens.size());
  KvCache cache = KvCache::for_model(model.config(), (n + kBlockSize - 1) / kBlockSize, kBlockSize, kv_dtype);
  ForwardWorkspace workspace(num_threads);
  const auto table = contiguous_block_table(n, kBlockSize);
  ForwardBatch batch;
  batch.sequences.push_back({tokens, 0, table, LogitsRequest::kAll});
  std::vector<float> logits(static_cast<size_t>(n * model.config().vocab_size));
  model.forward(batch, cache, workspace, logits);
  return logits;
}

}  // namespace lemma
