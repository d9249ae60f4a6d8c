// KvCache: the per-layer key/value storage addressed through block tables. Each layer holds K and V
// as [num_blocks, block_size, num_kv_heads, head_dim] f32; a sequence owns a list of block ids
// (its block table) and its token at position p lives in slot p % block_size of block
// table[p / block_size]. A contiguous cache is one sequence whose table is 0, 1, 2, ...
// Which blocks belong to whom is the caller's business (kv/ BlockPool). Move-only. Not thread-safe for
// concurrent writes to the same blocks.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <span>
#include <vector>

#include "lemma/model/model_config.h"

namespace lemma {

// One layer's storage; pointers stay valid while the KvCache lives.
struct KvLayerView {
  float* keys = nullptr;    // [num_blocks, block_size, num_kv_heads, head_dim]
  float* values = nullptr;  // [num_blocks, block_size, num_kv_heads, head_dim]
  int64_t num_blocks = 0;
  int64_t block_size = 0;  // tokens per block
  int64_t num_kv_heads = 0;
  int64_t head_dim = 0;

  int64_t token_stride() const { return num_kv_heads * head_dim; }  // floats per token slot
  // Offset in floats of (block table, position) for head 0.
  int64_t slot_offset(std::span<const int32_t> block_table, int64_t position) const {
    const int64_t block = block_table[static_cast<size_t>(position / block_size)];
    return (block * block_size + position % block_size) * token_stride();
  }
};

class KvCache {
 public:
  KvCache() = default;
  KvCache(int64_t num_layers, int64_t num_blocks, int64_t block_size, int64_t num_kv_heads, int64_t head_dim);
  static KvCache for_model(const ModelConfig& config, int64_t num_blocks, int64_t block_size);

  KvCache(KvCache&&) noexcept = default;
  KvCache& operator=(KvCache&&) noexcept = default;
  KvCache(const KvCache&) = delete;
  KvCache& operator=(const KvCache&) = delete;

  KvLayerView layer(int64_t index);
  int64_t num_layers() const { return num_layers_; }
  int64_t num_blocks() const { return num_blocks_; }
  int64_t block_size() const { return block_size_; }
  int64_t num_kv_heads() const { return num_kv_heads_; }
  int64_t head_dim() const { return head_dim_; }
  // Tokens the whole cache can hold.
  int64_t capacity_tokens() const { return num_blocks_ * block_size_; }
  uint64_t bytes() const { return static_cast<uint64_t>(num_floats_) * sizeof(float); }

 private:
  int64_t num_layers_ = 0, num_blocks_ = 0, block_size_ = 0, num_kv_heads_ = 0, head_dim_ = 0;
  // [num_layers, 2, num_blocks, block_size, num_kv_heads, head_dim], zero-filled by calloc: large
  // caches come as untouched zero pages from the OS, so a server starts at once and memory is
  // committed only as blocks are first written.
  struct FreeDeleter {
    void operator()(float* p) const { std::free(p); }
  };
  std::unique_ptr<float[], FreeDeleter> storage_;
  size_t num_floats_ = 0;
};

// Copies block `src_block` of `from` (every layer, K and V) into block `dst_block` of `to`; the two
// caches must have the same layers, block size, heads and head size (they may be the same cache:
// copy-on-write). Used for swap-out/swap-in between the device cache and a host-side tier.
// Throws InvalidArgument for mismatched shapes or block ids out of range.
void copy_kv_block(KvCache& from, int64_t src_block, KvCache& to, int64_t dst_block);

// Block table 0, 1, ..., ceil(num_tokens / block_size) - 1 (a contiguous sequence).
std::vector<int32_t> contiguous_block_table(int64_t num_tokens, int64_t block_size);

}  // namespace lemma
