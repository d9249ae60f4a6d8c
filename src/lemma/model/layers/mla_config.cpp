#include "lemma/model/layers/mla_config.h"

#include <cmath>

#include <fmt/format.h>

#include "lemma/base/error.h"

namespace lemma {

void MlaConfig::validate(const std::string& arch) const {
  if (!enabled()) return;
  const auto positive = [&](const char* name, int64_t value) {
    if (value <= 0) fail<InvalidArgument>("model config ({}): MLA {} must be positive, got {}", arch, name, value);
  };
  positive("qk_nope_head_dim", qk_nope_head_dim);
  positive("qk_rope_head_dim", qk_rope_head_dim);
  positive("v_head_dim", v_head_dim);
  if (q_lora_rank < 0) fail<InvalidArgument>("model config ({}): MLA q_lora_rank {} is negative", arch, q_lora_rank);
  if (qk_rope_head_dim % 2 != 0)
    fail<InvalidArgument>("model config ({}): MLA qk_rope_head_dim {} must be even", arch, qk_rope_head_dim);
  if (!(softmax_scale > 0.0f)) fail<InvalidArgument>("model config ({}): MLA softmax scale must be positive", arch);
}

std::string MlaConfig::summary() const {
  if (!enabled()) return "";
  std::string s = fmt::format(", mla kv_lora {} (+rope {})", kv_lora_rank, qk_rope_head_dim);
  if (q_lora_rank > 0) s += fmt::format(", q_lora {}", q_lora_rank);
  return s + fmt::format(", nope {}, v {}", qk_nope_head_dim, v_head_dim);
}

float mla_softmax_scale(int64_t qk_head_dim, double yarn_factor, double mscale_all_dim) {
  double scale = 1.0 / std::sqrt(static_cast<double>(qk_head_dim));
  if (mscale_all_dim != 0.0 && yarn_factor > 1.0) {
    const double mscale = 0.1 * mscale_all_dim * std::log(yarn_factor) + 1.0;
    scale *= mscale * mscale;
  }
  return static_cast<float>(scale);
}

}  // namespace lemma
