// Tensor parallelism inside the model (G7): a rank's share of the config and weights, cut by
// dist::plan_tensor_parallel, and the forward's collectives over RuntimeOptions::tensor_parallel.
// Column-parallel q/k/v and gate/up keep whole output rows (a contiguous sub-view of the file's
// matrix: nothing else of it is ever read); row-parallel o_proj and down keep an input-column range
// of every row, copied out in whole quant blocks; the embedding and LM head keep a vocabulary range.
// The forward then needs one all-reduce after o_proj, one after down, one after the embedding lookup
// (each rank fills only its vocabulary's rows) and one all-gather of the logits.
// Everything here runs at load or inside one rank's forward; the shard is immutable after load.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "lemma/dist/tensor_parallel_plan.h"
#include "lemma/model/model_config.h"
#include "lemma/model/model_weights.h"
#include "lemma/tensor/tensor_view.h"

namespace lemma::dist {
class Communicator;
}

namespace lemma {

struct TensorParallelShard {
  dist::Communicator* comm = nullptr;  // the TP group (kept alive by the Model's RuntimeOptions)
  dist::TensorParallelSlices slices = {};
  uint64_t matrix_bytes = 0;       // bytes of the matrices this rank holds (and so ever reads)
  uint64_t full_matrix_bytes = 0;  // the same over the whole model (what one rank alone would read)
  // The file pages (4 KiB) those matrices lie on, what a rank reads over a lazy mmap: more than
  // matrix_bytes because o_proj's and down's rows are row-major in the file, so a rank's input
  // columns share pages with the other ranks' wherever a row is shorter than a few pages.
  uint64_t page_bytes = 0;
  std::vector<std::vector<uint8_t>> copies;  // the row-parallel slices (input columns are strided in the file)
};

// The rank's config: its query heads, KV heads and intermediate columns; the vocabulary stays
// whole (the logits are gathered, token ids are global).
ModelConfig shard_config(const ModelConfig& full, const dist::TensorParallelSlices& slices);

// Cuts `weights` (loaded against `full`, views over the file not yet read) down to the rank's slices.
// Throws Unsupported for MoE layers, for act-order input orders on o_proj/down, and, naming the
// tensor, when a row-parallel slice does not fall on whole quant blocks of its dtype.
std::unique_ptr<TensorParallelShard> shard_model_weights(ModelWeights& weights, const ModelConfig& full, WeightFormat format,
                                                         const dist::TensorParallelSlices& slices, dist::Communicator* comm);

// rows [n, hidden] = the embedding rows of `ids` (global ids). With a shard: only the rank's
// vocabulary's rows, zeros elsewhere, then summed over the group (exact: one rank adds a non-zero).
void embed_tokens(const TensorView& embedding, const TensorParallelShard* tp, std::span<const int32_t> ids,
                  int64_t hidden, std::span<float> rows);

// Sums every rank's partial row-parallel output (o_proj, down) in place.
void all_reduce_partial(const TensorParallelShard& tp, std::span<float> partial);

// The floats one rank's LM head writes for `rows` logit rows (its vocabulary share, padded to the
// group's common stride so the all-gather moves equal blocks).
int64_t local_logits_floats(const TensorParallelShard& tp, int64_t rows);
// logits [rows, vocab] from every rank's `local` ([rows, its vocabulary share], row-major, in a
// buffer of local_logits_floats()); `gathered` is scratch, grown as needed.
void gather_logits(const TensorParallelShard& tp, std::span<const float> local, int64_t rows, int64_t vocab,
                   std::vector<float>& gathered, std::span<float> logits);

}  // namespace lemma
