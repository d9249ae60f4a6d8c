// KvCache: the per-layer key/value storage addressed through block tables. Each layer holds K and V
// as [num_blocks, block_size, num_kv_heads, head_dim] elements of the cache's KvDtype (f32 by
// default; bf16; int8 or fp8-e4m3 with one f32 scale per (token, KV head) in
// [num_blocks, block_size, num_kv_heads] beside them, G23). A sequence owns a list of block ids
// (its block table) and its token at position p lives in slot p % block_size of block
// table[p / block_size]. A contiguous cache is one sequence whose table is 0, 1, 2, ...
// A latent cache (MLA, G28) holds one tensor per layer instead of two: each token's row is
// [c_kv | k_pe] (num_kv_heads 1, head_dim kv_lora_rank + rope), read as keys and, its first
// kv_lora_rank values, as values (the view's values alias its keys).
// Which blocks belong to whom is the caller's business (kv/ BlockPool). Move-only. Not thread-safe for
// concurrent writes to the same blocks.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <span>
#include <vector>

#include "lemma/kernels/attention/kv_dtype.h"
#include "lemma/model/model_config.h"

namespace lemma {

using kernels::KvDtype;

// One layer's storage; pointers stay valid while the KvCache lives.
struct KvLayerView {
  void* keys = nullptr;    // [num_blocks, block_size, num_kv_heads, head_dim] elements of dtype
  void* values = nullptr;  // [num_blocks, block_size, num_kv_heads, head_dim] elements of dtype
  float* key_scales = nullptr;    // [num_blocks, block_size, num_kv_heads]; int8/fp8 only, else null
  float* value_scales = nullptr;  // [num_blocks, block_size, num_kv_heads]; int8/fp8 only, else null
  int64_t num_blocks = 0;
  int64_t block_size = 0;  // tokens per block
  int64_t num_kv_heads = 0;
  int64_t head_dim = 0;
  KvDtype dtype = KvDtype::kF32;
  bool latent = false;  // MLA: values == keys (and value_scales == key_scales)

  int64_t token_stride() const { return num_kv_heads * head_dim; }  // elements per token slot
  // Slot index (block * block_size + offset) of a position in a sequence's block table.
  int64_t slot(std::span<const int32_t> block_table, int64_t position) const {
    return block_table[static_cast<size_t>(position / block_size)] * block_size + position % block_size;
  }
  // Offset in elements of (block table, position) for head 0.
  int64_t slot_offset(std::span<const int32_t> block_table, int64_t position) const {
    return slot(block_table, position) * token_stride();
  }
};

// Stores one token's keys and values ([num_kv_heads * head_dim] f32 each) in cache slot `slot`,
// encoding each head's row in the cache's dtype (kernels/attention/kv_quant.h) with its scale.
void write_kv_slot(const KvLayerView& view, int64_t slot, const float* keys, const float* values);
// A latent cache's slot: one row [head_dim] f32 (c_kv then k_pe), encoded in the cache's dtype.
void write_latent_slot(const KvLayerView& view, int64_t slot, const float* row);

class KvCache {
 public:
  KvCache() = default;
  KvCache(int64_t num_layers, int64_t num_blocks, int64_t block_size, int64_t num_kv_heads, int64_t head_dim,
          KvDtype dtype = KvDtype::kF32, bool latent = false);
  // Per-head K/V, or for an MLA model (config.mla) a latent cache of config.cache_head_dim() per token.
  static KvCache for_model(const ModelConfig& config, int64_t num_blocks, int64_t block_size,
                           KvDtype dtype = KvDtype::kF32);

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
  KvDtype dtype() const { return dtype_; }
  bool latent() const { return latent_; }
  // Tokens the whole cache can hold.
  int64_t capacity_tokens() const { return num_blocks_ * block_size_; }
  // Bytes of keys, values and scales: capacity_tokens() x bytes_per_token() (the allocation adds
  // at most 64 bytes of alignment padding).
  uint64_t bytes() const { return static_cast<uint64_t>(capacity_tokens()) * bytes_per_token(); }
  uint64_t bytes_per_token() const {
    return kv_cache_bytes_per_token(num_layers_, num_kv_heads_, head_dim_, dtype_, latent_);
  }
  // K and V of one token in every layer: 2 x layers x kv_heads x (head_dim x element bytes + scale bytes);
  // a latent cache has one row per layer instead of two (no factor 2).
  static uint64_t kv_cache_bytes_per_token(int64_t num_layers, int64_t num_kv_heads, int64_t head_dim,
                                           KvDtype dtype, bool latent = false);

 private:
  int64_t num_layers_ = 0, num_blocks_ = 0, block_size_ = 0, num_kv_heads_ = 0, head_dim_ = 0;
  KvDtype dtype_ = KvDtype::kF32;
  bool latent_ = false;
  int64_t tensors_per_layer() const { return latent_ ? 1 : 2; }
  // Elements [num_layers, 2 (1 latent), num_blocks, block_size, num_kv_heads, head_dim], then (int8/fp8, from
  // a 64-byte boundary) scales [num_layers, 2, num_blocks, block_size, num_kv_heads], zero-filled
  // by calloc: large caches come as untouched zero pages from the OS, so a server starts at once
  // and memory is committed only as blocks are first written.
  struct FreeDeleter {
    void operator()(char* p) const { std::free(p); }
  };
  std::unique_ptr<char[], FreeDeleter> storage_;
  size_t scales_offset_ = 0;  // bytes from storage_ to the first scale
};

// Copies block `src_block` of `from` (every layer, K and V, with their scales) into block
// `dst_block` of `to`; the two caches must have the same layers, block size, heads, head size and
// dtype (they may be the same cache: copy-on-write). Used for swap-out/swap-in between the device
// cache and a host-side tier. Throws InvalidArgument for mismatched caches or block ids out of range.
void copy_kv_block(KvCache& from, int64_t src_block, KvCache& to, int64_t dst_block);

// Moves a sequence's tokens within its own block table: for i = 0, 1, ... in order, copies the K/V
// (and scales) of position from[i] to position to[i], in every layer, bitwise. Tree speculation
// (G12) uses it to move an accepted path's nodes from their tree slots (num_cached + node index) to
// the slots their positions name (num_cached + depth); since a node's index is at least its depth,
// no copy overwrites a source a later one still reads. Throws InvalidArgument (before copying
// anything) for spans of different lengths, positions outside the table or blocks outside the cache.
void copy_kv_slots(KvCache& cache, std::span<const int32_t> block_table, std::span<const int64_t> from,
                   std::span<const int64_t> to);

// Block table 0, 1, ..., ceil(num_tokens / block_size) - 1 (a contiguous sequence).
std::vector<int32_t> contiguous_block_table(int64_t num_tokens, int64_t block_size);

}  // namespace lemma
