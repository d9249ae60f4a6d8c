#include "lemma/model/greedy_generate.h"

#include <algorithm>

#include "lemma/base/error.h"
#include "lemma/kernels/vocab_ops.h"

namespace lemma {

int32_t greedy_token(std::span<const float> logits) {
  return static_cast<int32_t>(std::max<int64_t>(0, kernels::argmax_first(logits)));
}

std::vector<int32_t> generate_greedy(const Model& model, std::span<const int32_t> prompt, int64_t num_new,
                                     std::optional<int32_t> stop_token, int num_threads,
                                     const LoraAdapter* lora) {
  if (prompt.empty()) fail<InvalidArgument>("generate_greedy: empty prompt");
  constexpr int64_t kBlockSize = 16;
  const int64_t total = static_cast<int64_t>(prompt.size()) + num_new;
  KvCache cache = KvCache::for_model(model.config(), (total + kBlockSize - 1) / kBlockSize, kBlockSize);
  const std::vector<int32_t> table = contiguous_block_table(total, kBlockSize);
  ForwardWorkspace workspace(num_threads, model.runtime().pin_threads);
  std::vector<float> logits(static_cast<size_t>(model.config().vocab_size));
  std::vector<int32_t> out;
  out.reserve(static_cast<size_t>(num_new));

  ForwardBatch batch;
  batch.sequences.push_back({prompt, 0, table, LogitsRequest::kLast, {}, {}, lora});
  int32_t next = 0;
  for (int64_t step = 0; step < num_new; ++step) {
    model.forward(batch, cache, workspace, logits);
    next = greedy_token(logits);
    out.push_back(next);
    if (stop_token && next == *stop_token) break;
    batch.sequences[0] = {std::span<const int32_t>(&next, 1),
                          static_cast<int64_t>(prompt.size()) + step, table, LogitsRequest::kLast, {}, {}, lora};
  }
  return out;
}

}  // namespace lemma
