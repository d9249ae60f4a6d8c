// Qwen2-MoE (Qwen1.5-MoE, Qwen2-57B-A14B): Qwen2 attention (q/k/v biases) with a mixture-of-experts
// MLP (G27): softmax router, top-k (renormalised only with norm_topk_prob), plus a shared expert whose
// output is scaled by sigmoid(shared_expert_gate . x). GGUF "qwen2moe" (NEOX RoPE).
#include "lemma/model/arch/arch_registry.h"
#include "lemma/model/arch/hf_fields.h"
#include "lemma/model/moe/moe_hf_fields.h"

namespace lemma {

namespace {
void read_qwen2_moe_fields(const nlohmann::json& j, ModelConfig& config) {
  config.head_dim = config.hidden_size / config.num_heads;  // as Qwen2: "head_dim" is ignored
  config.rope.rotary_dim = config.head_dim;
  hf::read_qwen_sliding_window(j, config);
  hf::read_qwen_moe_fields(j, config);
}
}  // namespace

extern const ArchSpec kQwen2MoeArch{
    .name = "qwen2moe",
    .hf_architectures = {"Qwen2MoeForCausalLM"},
    .hf_model_types = {"qwen2_moe"},
    .gguf_arch = "qwen2moe",
    .gguf_rope_layout = RopeLayout::kHalfSplit,
    .qkv_bias = true,
    .read_hf_fields = read_qwen2_moe_fields,
};

}  // namespace lemma
