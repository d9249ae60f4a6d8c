#include "lemma/model/rope_scaling.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "lemma/base/error.h"

namespace lemma {

std::optional<RopeScalingType> parse_rope_scaling_type(std::string_view name) {
  if (name == "default" || name == "none" || name.empty()) return RopeScalingType::kNone;
  if (name == "linear") return RopeScalingType::kLinear;
  if (name == "dynamic") return RopeScalingType::kDynamicNtk;
  if (name == "yarn") return RopeScalingType::kYarn;
  if (name == "llama3") return RopeScalingType::kLlama3;
  return std::nullopt;
}

std::string_view to_string(RopeScalingType type) {
  switch (type) {
    case RopeScalingType::kNone: return "default";
    case RopeScalingType::kLinear: return "linear";
    case RopeScalingType::kDynamicNtk: return "dynamic";
    case RopeScalingType::kYarn: return "yarn";
    case RopeScalingType::kLlama3: return "llama3";
  }
  return "?";
}

namespace {

std::vector<double> base_inv_freq(double theta, int64_t dim) {
  std::vector<double> inv(static_cast<size_t>(dim / 2));
  for (int64_t i = 0; i < dim / 2; ++i)
    inv[static_cast<size_t>(i)] = 1.0 / std::pow(theta, static_cast<double>(2 * i) / static_cast<double>(dim));
  return inv;
}

double yarn_mscale(double scale, double mscale) {
  return scale <= 1.0 ? 1.0 : 0.1 * mscale * std::log(scale) + 1.0;
}

// Dimension index at which a frequency makes `rotations` turns over `context` positions.
double yarn_correction_dim(double rotations, int64_t dim, double theta, double context) {
  return static_cast<double>(dim) * std::log(context / (rotations * 2.0 * std::numbers::pi)) /
         (2.0 * std::log(theta));
}

void apply_yarn(const RopeConfig& c, RopeFrequencies& f) {
  const RopeScaling& s = c.scaling;
  const int64_t dim = c.rotary_dim;
  if (s.attention_factor) {
    f.attention_factor = *s.attention_factor;
  } else if (s.mscale != 0.0 && s.mscale_all_dim != 0.0) {
    f.attention_factor = yarn_mscale(s.factor, s.mscale) / yarn_mscale(s.factor, s.mscale_all_dim);
  } else {
    f.attention_factor = yarn_mscale(s.factor, 1.0);
  }
  const double context = static_cast<double>(s.original_max_position_embeddings > 0
                                                 ? s.original_max_position_embeddings
                                                 : c.max_position_embeddings);
  double low = yarn_correction_dim(s.beta_fast, dim, c.theta, context);
  double high = yarn_correction_dim(s.beta_slow, dim, c.theta, context);
  if (s.yarn_truncate) {
    low = std::floor(low);
    high = std::ceil(high);
  }
  low = std::max(low, 0.0);
  high = std::min(high, static_cast<double>(dim - 1));
  if (low == high) high += 0.001;
  for (size_t i = 0; i < f.inv_freq.size(); ++i) {
    const double ramp = std::clamp((static_cast<double>(i) - low) / (high - low), 0.0, 1.0);
    const double extrapolation = 1.0 - ramp;  // weight of the unscaled frequency
    const double inv = f.inv_freq[i];
    f.inv_freq[i] = inv / s.factor * (1.0 - extrapolation) + inv * extrapolation;
  }
}

void apply_llama3(const RopeConfig& c, RopeFrequencies& f) {
  const RopeScaling& s = c.scaling;
  const double old_context = static_cast<double>(s.original_max_position_embeddings);
  const double low_freq_wavelen = old_context / s.low_freq_factor;
  const double high_freq_wavelen = old_context / s.high_freq_factor;
  for (double& inv : f.inv_freq) {
    const double wavelen = 2.0 * std::numbers::pi / inv;
    if (wavelen < high_freq_wavelen) continue;  // high frequencies unchanged
    if (wavelen > low_freq_wavelen) {
      inv /= s.factor;
      continue;
    }
    const double smooth = (old_context / wavelen - s.low_freq_factor) / (s.high_freq_factor - s.low_freq_factor);
    inv = (1.0 - smooth) * inv / s.factor + smooth * inv;
  }
}

}  // namespace

RopeFrequencies compute_rope_frequencies(const RopeConfig& c, int64_t seq_len) {
  if (c.rotary_dim <= 0 || c.rotary_dim % 2 != 0)
    fail<InvalidArgument>("rope: rotary_dim must be positive and even, got {}", c.rotary_dim);
  const RopeScaling& s = c.scaling;
  RopeFrequencies f;
  if (!s.freq_divisors.empty()) {
    if (static_cast<int64_t>(s.freq_divisors.size()) != c.rotary_dim / 2)
      fail<InvalidArgument>("rope: {} frequency divisors for rotary_dim {}", s.freq_divisors.size(), c.rotary_dim);
    f.inv_freq = base_inv_freq(c.theta, c.rotary_dim);
    for (size_t i = 0; i < f.inv_freq.size(); ++i) f.inv_freq[i] /= static_cast<double>(s.freq_divisors[i]);
    return f;
  }
  switch (s.type) {
    case RopeScalingType::kNone:
      f.inv_freq = base_inv_freq(c.theta, c.rotary_dim);
      break;
    case RopeScalingType::kLinear:
      f.inv_freq = base_inv_freq(c.theta, c.rotary_dim);
      for (double& inv : f.inv_freq) inv /= s.factor;
      break;
    case RopeScalingType::kDynamicNtk: {
      const double dim = static_cast<double>(c.rotary_dim);
      const double max_pos = static_cast<double>(c.max_position_embeddings);
      const double len = std::max(static_cast<double>(seq_len), max_pos);
      const double theta = c.theta * std::pow(s.factor * len / max_pos - (s.factor - 1.0), dim / (dim - 2.0));
      f.inv_freq = base_inv_freq(theta, c.rotary_dim);
      break;
    }
    case RopeScalingType::kYarn:
      f.inv_freq = base_inv_freq(c.theta, c.rotary_dim);
      apply_yarn(c, f);
      break;
    case RopeScalingType::kLlama3:
      f.inv_freq = base_inv_freq(c.theta, c.rotary_dim);
      apply_llama3(c, f);
      break;
  }
  return f;
}

}  // namespace lemma
