#include "lemma/model/model_config.h"

#include <algorithm>

#include <fmt/format.h>

#include "lemma/base/error.h"

namespace lemma {

void ModelConfig::validate() const {
  auto positive = [&](const char* name, int64_t value) {
    if (value <= 0) fail<InvalidArgument>("model config ({}): {} must be positive, got {}", arch, name, value);
  };
  positive("vocab_size", vocab_size);
  positive("hidden_size", hidden_size);
  positive("intermediate_size", intermediate_size);
  positive("num_layers", num_layers);
  positive("num_heads", num_heads);
  positive("num_kv_heads", num_kv_heads);
  positive("head_dim", head_dim);
  if (num_heads % num_kv_heads != 0)
    fail<InvalidArgument>("model config ({}): num_heads {} is not a multiple of num_kv_heads {}", arch, num_heads,
                          num_kv_heads);
  if (mla.enabled() && (rope.rotary_dim != mla.qk_rope_head_dim || head_dim != mla.qk_head_dim()))
    fail<InvalidArgument>("model config ({}): MLA needs rotary dim {} = qk_rope_head_dim {} and head_dim {} = nope + rope {}",
                          arch, rope.rotary_dim, mla.qk_rope_head_dim, head_dim, mla.qk_head_dim());
  if (!mla.enabled() && rope.rotary_dim != head_dim)
    fail<Unsupported>("model config ({}): partial rotary embeddings (rotary dim {} of head_dim {}) are not supported",
                      arch, rope.rotary_dim, head_dim);
  if (head_dim % 2 != 0) fail<InvalidArgument>("model config ({}): head_dim {} must be even", arch, head_dim);
  if (!(rms_norm_eps > 0.0f)) fail<InvalidArgument>("model config ({}): rms_norm_eps must be positive", arch);
  if (!(rope.theta > 0.0)) fail<InvalidArgument>("model config ({}): rope theta must be positive", arch);
  const RopeScaling& s = rope.scaling;
  if (s.type != RopeScalingType::kNone && !(s.factor > 0.0))
    fail<InvalidArgument>("model config ({}): rope scaling factor must be positive, got {}", arch, s.factor);
  if (s.type == RopeScalingType::kDynamicNtk && rope.max_position_embeddings <= 0)
    fail<InvalidArgument>("model config ({}): dynamic rope scaling needs max_position_embeddings", arch);
  if (s.type == RopeScalingType::kLlama3 && s.freq_divisors.empty()) {
    if (s.original_max_position_embeddings <= 0)
      fail<InvalidArgument>("model config ({}): llama3 rope scaling needs original_max_position_embeddings", arch);
    if (!(s.high_freq_factor > s.low_freq_factor))
      fail<InvalidArgument>("model config ({}): llama3 rope scaling needs high_freq_factor > low_freq_factor", arch);
  }
  if (!sliding_window.empty() && static_cast<int64_t>(sliding_window.size()) != num_layers)
    fail<InvalidArgument>("model config ({}): {} sliding-window entries for {} layers", arch, sliding_window.size(),
                          num_layers);
  for (int64_t w : sliding_window)
    if (w < 0) fail<InvalidArgument>("model config ({}): negative sliding window {}", arch, w);
  moe.validate(arch);
  mla.validate(arch);
}

int64_t ModelConfig::first_attended_position(int64_t position) const {
  if (sliding_window.empty()) return 0;
  int64_t widest = 0;
  for (int64_t w : sliding_window) {
    if (w == 0) return 0;  // a full-attention layer needs everything
    widest = std::max(widest, w);
  }
  return std::max<int64_t>(0, position - widest + 1);
}

std::string ModelConfig::summary() const {
  std::string s = fmt::format("{}: {} layers, hidden {}, ffn {}, {} heads x {} ({} kv), vocab {}, rope {} theta {}",
                              arch, num_layers, hidden_size, intermediate_size, num_heads, head_dim, num_kv_heads,
                              vocab_size, to_string(rope.scaling.type), rope.theta);
  if (!rope.scaling.freq_divisors.empty()) s += " (frequency divisors)";
  if (rope.scaling.type != RopeScalingType::kNone) s += fmt::format(" x{}", rope.scaling.factor);
  if (tie_word_embeddings) s += ", tied embeddings";
  if (qkv_bias) s += ", qkv bias";
  if (qk_norm) s += ", q/k norm";
  if (!sliding_window.empty()) s += fmt::format(", sliding window {}", sliding_window.front());
  s += moe.summary();
  s += mla.summary();
  return s;
}

}  // namespace lemma
