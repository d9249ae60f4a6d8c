#include "lemma/model/forward_workspace.h"

namespace lemma {

namespace {
template <typename T>
void grow(std::vector<T>& buffer, int64_t elements) {
  if (static_cast<int64_t>(buffer.size()) < elements) buffer.resize(static_cast<size_t>(elements));
}
}  // namespace

void ForwardWorkspace::reserve(const ModelConfig& c, int64_t num_tokens, int64_t num_logit_rows, int64_t max_context) {
  grow(residual, num_tokens * c.hidden_size);
  grow(normed, num_tokens * c.hidden_size);
  grow(q, num_tokens * c.q_dim());
  grow(k, num_tokens * c.kv_dim());
  grow(v, num_tokens * c.kv_dim());
  grow(attn_out, num_tokens * c.q_dim());
  grow(gate, num_tokens * c.intermediate_size);
  grow(up, num_tokens * c.intermediate_size);
  grow(head_input, num_logit_rows * c.hidden_size);
  // Context grows by one token per decode step: round up so that the buffer grows once per 1024
  // tokens, not at every step (steady-state decode allocates nothing).
  grow(scores, (max_context + 1023) / 1024 * 1024 * c.num_heads);
  grow(positions, num_tokens);
  grow(rope_cos, num_tokens * (c.rope.rotary_dim / 2));
  grow(rope_sin, num_tokens * (c.rope.rotary_dim / 2));
}

void ForwardWorkspace::reserve_kernel_scratch(size_t bytes) {
  if (bytes == 0) return;
  for (kernels::KernelScratch& scratch : kernel_scratch)
    if (scratch.capacity() < bytes) scratch.reserve(bytes);
}

}  // namespace lemma
