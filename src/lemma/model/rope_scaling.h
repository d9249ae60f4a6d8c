// RoPE frequency parameters and their scaling variants (linear, dynamic NTK, YaRN, Llama-3), computed
// as Hugging Face transformers' modeling_rope_utils defines them. Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

namespace lemma {

// How the two halves of a rotated pair are laid out within one head.
enum class RopeLayout {
  kHalfSplit,    // HF rotate_half / llama.cpp NEOX: dimension i pairs with i + rotary_dim/2
  kInterleaved,  // llama.cpp "normal" (GGUF llama arch): dimension 2i pairs with 2i+1
};

enum class RopeScalingType { kNone, kLinear, kDynamicNtk, kYarn, kLlama3 };

// Parses HF's rope_type names ("default", "linear", "dynamic", "yarn", "llama3"); nullopt otherwise.
std::optional<RopeScalingType> parse_rope_scaling_type(std::string_view name);
std::string_view to_string(RopeScalingType type);

struct RopeScaling {
  RopeScalingType type = RopeScalingType::kNone;
  double factor = 1.0;                       // linear/dynamic/yarn/llama3
  int64_t original_max_position_embeddings = 0;  // yarn, llama3 (tokens)
  double low_freq_factor = 1.0;              // llama3
  double high_freq_factor = 4.0;             // llama3
  double beta_fast = 32.0;                   // yarn (rotations)
  double beta_slow = 1.0;                    // yarn
  std::optional<double> attention_factor;    // yarn: multiplies cos and sin; default 0.1 ln(factor) + 1
  double mscale = 0.0, mscale_all_dim = 0.0; // yarn (DeepSeek style); 0 = unset
  bool yarn_truncate = true;                 // yarn: floor/ceil the correction range
  // Per-frequency divisors [rotary_dim/2] that replace the formula (GGUF rope_freqs.weight, Llama-3).
  std::vector<float> freq_divisors;
};

struct RopeConfig {
  double theta = 10000.0;              // base
  int64_t rotary_dim = 0;              // rotated dimensions per head (= head_dim here)
  RopeLayout layout = RopeLayout::kHalfSplit;
  RopeScaling scaling;
  int64_t max_position_embeddings = 0;  // dynamic NTK threshold (tokens)
};

// The rotation of one forward: angle(position p, pair i) = p * inv_freq[i]; cos and sin are both
// multiplied by attention_factor (YaRN's mscale; 1 otherwise).
struct RopeFrequencies {
  std::vector<double> inv_freq;  // [rotary_dim / 2], radians per position
  double attention_factor = 1.0;
};

// `seq_len` matters only for dynamic NTK: the length seen by this forward (max position + 1). HF
// rescales the base only when seq_len > max_position_embeddings; cached keys keep the rotation they
// were written with (as in transformers' dynamic_rope_update).
RopeFrequencies compute_rope_frequencies(const RopeConfig& config, int64_t seq_len);

}  // namespace lemma
