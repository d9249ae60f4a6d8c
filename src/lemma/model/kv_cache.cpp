#include "lemma/model/kv_cache.h"

#include <algorithm>
#include <cstring>

#include "lemma/base/error.h"
#include "lemma/kernels/attention/kv_quant.h"

namespace lemma {

namespace {
constexpr size_t kScaleAlignment = 64;
}  // namespace

uint64_t KvCache::kv_cache_bytes_per_token(int64_t num_layers, int64_t num_kv_heads, int64_t head_dim,
                                           KvDtype dtype, bool latent) {
  const uint64_t row = static_cast<uint64_t>(head_dim * kernels::kv_element_bytes(dtype)) +
                       (kernels::kv_dtype_has_scales(dtype) ? sizeof(float) : 0);
  return (latent ? 1 : 2) * static_cast<uint64_t>(num_layers) * static_cast<uint64_t>(num_kv_heads) * row;
}

KvCache::KvCache(int64_t num_layers, int64_t num_blocks, int64_t block_size, int64_t num_kv_heads, int64_t head_dim,
                 KvDtype dtype, bool latent)
    : num_layers_(num_layers),
      num_blocks_(num_blocks),
      block_size_(block_size),
      num_kv_heads_(num_kv_heads),
      head_dim_(head_dim),
      dtype_(dtype),
      latent_(latent) {
  if (num_layers <= 0 || num_blocks <= 0 || block_size <= 0 || num_kv_heads <= 0 || head_dim <= 0)
    fail<InvalidArgument>("kv cache: all sizes must be positive (layers {}, blocks {}, block size {}, kv heads {}, "
                          "head dim {})",
                          num_layers, num_blocks, block_size, num_kv_heads, head_dim);
  const size_t slots = static_cast<size_t>(num_layers * tensors_per_layer() * num_blocks * block_size * num_kv_heads);
  const size_t element_bytes = slots * static_cast<size_t>(head_dim * kernels::kv_element_bytes(dtype));
  const bool scaled = kernels::kv_dtype_has_scales(dtype);
  scales_offset_ = (element_bytes + kScaleAlignment - 1) / kScaleAlignment * kScaleAlignment;
  const size_t total = scaled ? scales_offset_ + slots * sizeof(float) : element_bytes;
  storage_.reset(static_cast<char*>(std::calloc(total, 1)));
  if (!storage_) fail<IoError>("kv cache: cannot allocate {} bytes", total);
}

KvCache KvCache::for_model(const ModelConfig& config, int64_t num_blocks, int64_t block_size, KvDtype dtype) {
  return KvCache(config.num_layers, num_blocks, block_size, config.cache_kv_heads(), config.cache_head_dim(), dtype,
                 config.mla.enabled());
}

KvLayerView KvCache::layer(int64_t index) {
  const int64_t slots = num_blocks_ * block_size_ * num_kv_heads_;  // per tensor
  const int64_t tensor_bytes = slots * head_dim_ * kernels::kv_element_bytes(dtype_);
  const int64_t tensors = tensors_per_layer();
  char* base = storage_.get() + index * tensors * tensor_bytes;
  KvLayerView v{base, base + (tensors - 1) * tensor_bytes, nullptr, nullptr, num_blocks_, block_size_, num_kv_heads_,
                head_dim_, dtype_, latent_};
  if (kernels::kv_dtype_has_scales(dtype_)) {
    float* scales = reinterpret_cast<float*>(storage_.get() + scales_offset_) + index * tensors * slots;
    v.key_scales = scales;
    v.value_scales = scales + (tensors - 1) * slots;
  }
  return v;
}

void write_kv_slot(const KvLayerView& view, int64_t slot, const float* keys, const float* values) {
  const int64_t hd = view.head_dim, esize = kernels::kv_element_bytes(view.dtype);
  const int64_t row0 = slot * view.num_kv_heads;  // (slot, head 0) in rows of head_dim
  for (int64_t h = 0; h < view.num_kv_heads; ++h) {
    const int64_t row = row0 + h;
    float* key_scale = view.key_scales != nullptr ? view.key_scales + row : nullptr;
    float* value_scale = view.value_scales != nullptr ? view.value_scales + row : nullptr;
    kernels::kv_encode_row(view.dtype, keys + h * hd, hd, static_cast<char*>(view.keys) + row * hd * esize, key_scale);
    kernels::kv_encode_row(view.dtype, values + h * hd, hd, static_cast<char*>(view.values) + row * hd * esize,
                           value_scale);
  }
}

void write_latent_slot(const KvLayerView& view, int64_t slot, const float* row) {
  const int64_t hd = view.head_dim, esize = kernels::kv_element_bytes(view.dtype);
  float* scale = view.key_scales != nullptr ? view.key_scales + slot : nullptr;
  kernels::kv_encode_row(view.dtype, row, hd, static_cast<char*>(view.keys) + slot * hd * esize, scale);
}

void copy_kv_block(KvCache& from, int64_t src_block, KvCache& to, int64_t dst_block) {
  if (from.num_layers() != to.num_layers() || from.block_size() != to.block_size() ||
      from.num_kv_heads() != to.num_kv_heads() || from.head_dim() != to.head_dim() || from.latent() != to.latent())
    fail<InvalidArgument>("kv block copy: the two caches have different shapes");
  if (from.dtype() != to.dtype())
    fail<InvalidArgument>("kv block copy: the caches hold {} and {}", kernels::kv_dtype_name(from.dtype()),
                          kernels::kv_dtype_name(to.dtype()));
  if (src_block < 0 || src_block >= from.num_blocks() || dst_block < 0 || dst_block >= to.num_blocks())
    fail<InvalidArgument>("kv block copy: block {} -> {} is out of range ({} and {} blocks)", src_block, dst_block,
                          from.num_blocks(), to.num_blocks());
  if (&from == &to && src_block == dst_block) return;
  for (int64_t l = 0; l < from.num_layers(); ++l) {
    const KvLayerView a = from.layer(l);
    const KvLayerView b = to.layer(l);
    const int64_t block_slots = a.block_size * a.num_kv_heads;
    const size_t block_bytes = static_cast<size_t>(block_slots * a.head_dim * kernels::kv_element_bytes(a.dtype));
    const auto element_block = [&](void* base, int64_t block) { return static_cast<char*>(base) + block * block_bytes; };
    std::memcpy(element_block(b.keys, dst_block), element_block(a.keys, src_block), block_bytes);
    if (!a.latent) std::memcpy(element_block(b.values, dst_block), element_block(a.values, src_block), block_bytes);
    if (a.key_scales == nullptr) continue;
    std::copy_n(a.key_scales + src_block * block_slots, block_slots, b.key_scales + dst_block * block_slots);
    if (!a.latent) std::copy_n(a.value_scales + src_block * block_slots, block_slots, b.value_scales + dst_block * block_slots);
  }
}

void copy_kv_slots(KvCache& cache, std::span<const int32_t> block_table, std::span<const int64_t> from,
                   std::span<const int64_t> to) {
  if (from.size() != to.size())
    fail<InvalidArgument>("kv slot copy: {} sources for {} destinations", from.size(), to.size());
  const int64_t bs = cache.block_size();
  const auto check = [&](int64_t position) {
    if (position < 0 || position / bs >= static_cast<int64_t>(block_table.size()))
      fail<InvalidArgument>("kv slot copy: position {} outside a block table of {} blocks of {}", position,
                            block_table.size(), bs);
    const int32_t block = block_table[static_cast<size_t>(position / bs)];
    if (block < 0 || block >= cache.num_blocks())
      fail<InvalidArgument>("kv slot copy: position {} is in block {}, outside the cache's {} blocks", position, block,
                            cache.num_blocks());
  };
  for (size_t i = 0; i < from.size(); ++i) check(from[i]), check(to[i]);
  for (int64_t l = 0; l < cache.num_layers(); ++l) {
    const KvLayerView v = cache.layer(l);
    const int64_t heads = v.num_kv_heads;
    const auto row_bytes = static_cast<size_t>(v.token_stride() * kernels::kv_element_bytes(v.dtype));
    for (size_t i = 0; i < from.size(); ++i) {
      const int64_t src = v.slot(block_table, from[i]), dst = v.slot(block_table, to[i]);
      if (src == dst) continue;
      std::memcpy(static_cast<char*>(v.keys) + dst * row_bytes, static_cast<char*>(v.keys) + src * row_bytes, row_bytes);
      if (!v.latent)
        std::memcpy(static_cast<char*>(v.values) + dst * row_bytes, static_cast<char*>(v.values) + src * row_bytes,
                    row_bytes);
      if (v.key_scales == nullptr) continue;
      std::copy_n(v.key_scales + src * heads, heads, v.key_scales + dst * heads);
      if (!v.latent) std::copy_n(v.value_scales + src * heads, heads, v.value_scales + dst * heads);
    }
  }
}

std::vector<int32_t> contiguous_block_table(int64_t num_tokens, int64_t block_size) {
  std::vector<int32_t> table(static_cast<size_t>((num_tokens + block_size - 1) / block_size));
  for (size_t i = 0; i < table.size(); ++i) table[i] = static_cast<int32_t>(i);
  return table;
}

}  // namespace lemma
