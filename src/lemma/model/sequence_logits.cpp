#include "lemma/model/sequence_logits.h"

#include "lemma/base/error.h"
#include "lemma/model/kv_cache.h"

namespace lemma {

namespace {

std::vector<float> run_sequence(const Model& model, std::span<const int32_t> tokens, int num_threads, KvDtype kv_dtype,
                                LogitsRequest logits_rows, const LinearInputObserver& observer,
                                const LoraAdapter* lora = nullptr) {
  if (tokens.empty()) fail<InvalidArgument>("sequence_logits: give at least one token");
  constexpr int64_t kBlockSize = 16;
  const auto n = static_cast<int64_t>(tokens.size());
  KvCache cache = KvCache::for_model(model.config(), (n + kBlockSize - 1) / kBlockSize, kBlockSize, kv_dtype);
  ForwardWorkspace workspace(num_threads, model.runtime().pin_threads);
  workspace.observe_linear_input = observer;
  const auto table = contiguous_block_table(n, kBlockSize);
  ForwardBatch batch;
  batch.sequences.push_back({tokens, 0, table, logits_rows, {}, {}, lora});
  std::vector<float> logits(static_cast<size_t>(batch.num_logit_rows() * model.config().vocab_size));
  model.forward(batch, cache, workspace, logits);
  return logits;
}

}  // namespace

std::vector<float> sequence_logits(const Model& model, std::span<const int32_t> tokens, int num_threads,
                                   KvDtype kv_dtype, const LoraAdapter* lora) {
  return run_sequence(model, tokens, num_threads, kv_dtype, LogitsRequest::kAll, {}, lora);
}

std::vector<float> observe_sequence(const Model& model, std::span<const int32_t> tokens, int num_threads,
                                    const LinearInputObserver& observer) {
  return run_sequence(model, tokens, num_threads, KvDtype::kF32, LogitsRequest::kLast, observer);
}

}  // namespace lemma
