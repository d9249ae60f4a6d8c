// The tensor-parallel sharding plan (G7): which slice of each sharded dimension of a decoder rank r
// of T holds. Attention is split by KV head (each rank keeps whole GQA groups: its KV heads and the
// query heads that read them), or, with more ranks than KV heads, each KV head is replicated on
// T / num_kv_heads ranks that split its query heads; the MLP by intermediate column; the vocabulary
// (embedding rows, LM head rows) in equal padded shares. Pure arithmetic over the model's sizes, so
// that each rank can load only its slices before anything is read. Plain data; thread-safe.
#pragma once

#include <cstdint>

namespace lemma::dist {

struct IndexRange {
  int64_t begin = 0;
  int64_t end = 0;
  int64_t size() const { return end - begin; }
};

// The sizes the plan cuts (a ModelConfig's, without depending on model/).
struct TensorParallelDims {
  int64_t num_heads = 0;
  int64_t num_kv_heads = 0;
  int64_t intermediate_size = 0;
  int64_t vocab_size = 0;
};

struct TensorParallelSlices {
  int rank = 0;
  int size = 1;
  IndexRange q_heads;   // query heads [begin, end)
  IndexRange kv_heads;  // KV heads (one replicated head when size > num_kv_heads)
  IndexRange ffn;       // intermediate columns of gate/up, input columns of down
  IndexRange vocab;     // embedding and LM head rows
  int64_t vocab_stride = 0;  // ceil(vocab / size): every rank's share in the logits all-gather, padded
};

// Throws InvalidArgument naming the dimension that does not divide (num_kv_heads by T, or T by
// num_kv_heads; num_heads by T when KV heads are replicated; intermediate_size by T; a vocabulary
// too small to give every rank a row) or a rank outside [0, size).
TensorParallelSlices plan_tensor_parallel(const TensorParallelDims& dims, int rank, int size);

}  // namespace lemma::dist
