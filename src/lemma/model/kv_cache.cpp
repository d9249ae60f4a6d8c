#include "lemma/model/kv_cache.h"

#include "lemma/base/error.h"

namespace lemma {

KvCache::KvCache(int64_t num_layers, int64_t num_blocks, int64_t block_size, int64_t num_kv_heads, int64_t head_dim)
    : num_layers_(num_layers),
      num_blocks_(num_blocks),
      block_size_(block_size),
      num_kv_heads_(num_kv_heads),
      head_dim_(head_dim) {
  if (num_layers <= 0 || num_blocks <= 0 || block_size <= 0 || num_kv_heads <= 0 || head_dim <= 0)
    fail<InvalidArgument>("kv cache: all sizes must be positive (layers {}, blocks {}, block size {}, kv heads {}, "
                          "head dim {})",
                          num_layers, num_blocks, block_size, num_kv_heads, head_dim);
  storage_.assign(static_cast<size_t>(num_layers * 2 * num_blocks * block_size * num_kv_heads * head_dim), 0.0f);
}

KvCache KvCache::for_model(const ModelConfig& config, int64_t num_blocks, int64_t block_size) {
  return KvCache(config.num_layers, num_blocks, block_size, config.num_kv_heads, config.head_dim);
}

KvLayerView KvCache::layer(int64_t index) {
  const int64_t per_tensor = num_blocks_ * block_size_ * num_kv_heads_ * head_dim_;
  float* base = storage_.data() + index * 2 * per_tensor;
  return KvLayerView{base, base + per_tensor, num_blocks_, block_size_, num_kv_heads_, head_dim_};
}

std::vector<int32_t> contiguous_block_table(int64_t num_tokens, int64_t block_size) {
  std::vector<int32_t> table(static_cast<size_t>((num_tokens + block_size - 1) / block_size));
  for (size_t i = 0; i < table.size(); ++i) table[i] = static_cast<int32_t>(i);
  return table;
}

}  // namespace lemma
