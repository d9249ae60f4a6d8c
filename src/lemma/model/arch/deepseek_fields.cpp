#include "lemma/model/arch/deepseek_fields.h"

#include "lemma/base/error.h"
#include "lemma/model/arch/hf_fields.h"
#include "lemma/model/moe/moe_hf_fields.h"

namespace lemma::hf {

void read_deepseek_fields(const nlohmann::json& j, ModelConfig& c, bool is_v3) {
  const char* arch = is_v3 ? "DeepSeek-V3" : "DeepSeek-V2";
  reject_if_true(j, "attention_bias", arch);
  MlaConfig& m = c.mla;
  m.q_lora_rank = get_int(j, "q_lora_rank").value_or(0);  // null in V2-Lite: q_proj
  m.kv_lora_rank = required_int(j, "kv_lora_rank");
  m.qk_nope_head_dim = required_int(j, "qk_nope_head_dim");
  m.qk_rope_head_dim = required_int(j, "qk_rope_head_dim");
  m.v_head_dim = required_int(j, "v_head_dim");
  // Every head reads the same latent: the config's num_key_value_heads does not describe the cache.
  c.num_kv_heads = c.num_heads;
  c.head_dim = m.qk_head_dim();
  c.rope.rotary_dim = m.qk_rope_head_dim;
  // modeling_deepseek.py moves q_pe/k_pe's interleaved pairs (2i, 2i+1) to (i, i + d/2) before
  // rotate_half: the same scores as rotating adjacent pairs in place.
  c.rope.layout = RopeLayout::kInterleaved;
  const RopeScaling& s = c.rope.scaling;
  double factor = 1.0;
  if (s.type == RopeScalingType::kYarn) {
    // DeepSeek's mscale uses the config's own "factor" (equal to the context ratio in its configs).
    factor = s.factor;
    if (auto it = j.find("rope_scaling"); it != j.end() && it->is_object())
      factor = get_float(*it, "factor").value_or(factor);
  }
  m.softmax_scale = mla_softmax_scale(m.qk_head_dim(), factor, s.type == RopeScalingType::kYarn ? s.mscale_all_dim : 0.0);
  if (is_v3) c.num_nextn_predict_layers = get_int(j, "num_nextn_predict_layers").value_or(0);
  if (get_int(j, "n_routed_experts").value_or(0) > 0) read_deepseek_moe_fields(j, c, is_v3);
}

}  // namespace lemma::hf
