#include "lemma/model/kv_cache.h"

#include <algorithm>

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
  num_floats_ = static_cast<size_t>(num_layers * 2 * num_blocks * block_size * num_kv_heads * head_dim);
  storage_.reset(static_cast<float*>(std::calloc(num_floats_, sizeof(float))));
  if (!storage_) fail<IoError>("kv cache: cannot allocate {} bytes", num_floats_ * sizeof(float));
}

KvCache KvCache::for_model(const ModelConfig& config, int64_t num_blocks, int64_t block_size) {
  return KvCache(config.num_layers, num_blocks, block_size, config.num_kv_heads, config.head_dim);
}

KvLayerView KvCache::layer(int64_t index) {
  const int64_t per_tensor = num_blocks_ * block_size_ * num_kv_heads_ * head_dim_;
  float* base = storage_.get() + index * 2 * per_tensor;
  return KvLayerView{base, base + per_tensor, num_blocks_, block_size_, num_kv_heads_, head_dim_};
}

void copy_kv_block(KvCache& from, int64_t src_block, KvCache& to, int64_t dst_block) {
  if (from.num_layers() != to.num_layers() || from.block_size() != to.block_size() ||
      from.num_kv_heads() != to.num_kv_heads() || from.head_dim() != to.head_dim())
    fail<InvalidArgument>("kv block copy: the two caches have different shapes");
  if (src_block < 0 || src_block >= from.num_blocks() || dst_block < 0 || dst_block >= to.num_blocks())
    fail<InvalidArgument>("kv block copy: block {} -> {} is out of range ({} and {} blocks)", src_block, dst_block,
                          from.num_blocks(), to.num_blocks());
  if (&from == &to && src_block == dst_block) return;
  for (int64_t l = 0; l < from.num_layers(); ++l) {
    const KvLayerView a = from.layer(l);
    const KvLayerView b = to.layer(l);
    const int64_t block_floats = a.block_size * a.token_stride();
    std::copy_n(a.keys + src_block * block_floats, block_floats, b.keys + dst_block * block_floats);
    std::copy_n(a.values + src_block * block_floats, block_floats, b.values + dst_block * block_floats);
  }
}

std::vector<int32_t> contiguous_block_table(int64_t num_tokens, int64_t block_size) {
  std::vector<int32_t> table(static_cast<size_t>((num_tokens + block_size - 1) / block_size));
  for (size_t i = 0; i < table.size(); ++i) table[i] = static_cast<int32_t>(i);
  return table;
}

}  // namespace lemma
