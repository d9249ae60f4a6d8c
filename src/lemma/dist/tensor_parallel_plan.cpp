#include "lemma/dist/tensor_parallel_plan.h"

#include <algorithm>

#include "lemma/base/error.h"

namespace lemma::dist {

TensorParallelSlices plan_tensor_parallel(const TensorParallelDims& d, int rank, int size) {
  if (size < 1) fail<InvalidArgument>("tensor parallel: size must be >= 1, got {}", size);
  if (rank < 0 || rank >= size) fail<InvalidArgument>("tensor parallel: rank {} outside [0, {})", rank, size);
  if (d.num_heads <= 0 || d.num_kv_heads <= 0 || d.num_heads % d.num_kv_heads != 0)
    fail<InvalidArgument>("tensor parallel: {} query heads over {} KV heads do not form whole groups", d.num_heads,
                          d.num_kv_heads);
  const int64_t T = size, r = rank;
  TensorParallelSlices s;
  s.rank = rank;
  s.size = size;
  if (T <= d.num_kv_heads) {
    if (d.num_kv_heads % T != 0)
      fail<InvalidArgument>("tensor parallel: num_kv_heads {} is not divisible by tensor-parallel size {}", d.num_kv_heads, T);
    const int64_t kv = d.num_kv_heads / T, q = d.num_heads / T;
    s.kv_heads = {r * kv, (r + 1) * kv};
    s.q_heads = {r * q, (r + 1) * q};
  } else {
    // More ranks than KV heads: each KV head lives on T / num_kv_heads ranks, which split its group.
    if (T % d.num_kv_heads != 0)
      fail<InvalidArgument>("tensor parallel: size {} is not a multiple of num_kv_heads {} (KV heads are replicated "
                            "only in whole copies)", T, d.num_kv_heads);
    if (d.num_heads % T != 0)
      fail<InvalidArgument>("tensor parallel: num_heads {} is not divisible by tensor-parallel size {}", d.num_heads, T);
    const int64_t replicas = T / d.num_kv_heads, q = d.num_heads / T;
    s.kv_heads = {r / replicas, r / replicas + 1};
    s.q_heads = {r * q, (r + 1) * q};
  }
  if (d.intermediate_size % T != 0)
    fail<InvalidArgument>("tensor parallel: intermediate_size {} is not divisible by tensor-parallel size {}",
                          d.intermediate_size, T);
  const int64_t f = d.intermediate_size / T;
  s.ffn = {r * f, (r + 1) * f};
  s.vocab_stride = (d.vocab_size + T - 1) / T;
  if (d.vocab_size <= 0 || (T - 1) * s.vocab_stride >= d.vocab_size)
    fail<InvalidArgument>("tensor parallel: vocabulary of {} cannot give each of {} ranks a share", d.vocab_size, T);
  s.vocab = {r * s.vocab_stride, std::min(d.vocab_size, (r + 1) * s.vocab_stride)};
  return s;
}

}  // namespace lemma::dist
