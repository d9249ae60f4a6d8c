// Reference scaled-dot-product attention: the plain, dense oracle every attention kernel is tested
// against (softmax(q k^T * scale + mask) v, accumulated in double). Slow by design; pure; thread-safe.
#pragma once

#include <cstdint>
#include <span>

namespace lemma::layers {

struct SdpaShape {
  int64_t num_queries = 0;
  int64_t num_keys = 0;
  int64_t num_heads = 0;     // query heads
  int64_t num_kv_heads = 0;  // query head h reads kv head h / (num_heads / num_kv_heads)
  int64_t head_dim = 0;
};

// Which keys a query may see. Query i sits at position query_offset + i in key coordinates.
struct SdpaMask {
  bool causal = true;              // key j visible only if j <= query position
  int64_t query_offset = 0;
  int64_t sliding_window = 0;      // > 0: key j visible only if query position - j < sliding_window
  std::span<const uint8_t> key_is_padding;  // [num_keys], nonzero = masked for every query (padding)
};

// q: [num_queries, num_heads, head_dim]; k, v: [num_keys, num_kv_heads, head_dim];
// out: [num_queries, num_heads, head_dim]. A query that sees no key gets zeros.
void reference_sdpa(std::span<const float> q, std::span<const float> k, std::span<const float> v,
                    const SdpaShape& shape, const SdpaMask& mask, float scale, std::span<float> out);

}  // namespace lemma::layers
