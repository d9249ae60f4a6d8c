// Qwen3-MoE (Qwen3-30B-A3B, Qwen3-235B-A22B): Qwen3 attention (per-head q/k RMSNorm) with a
// mixture-of-experts MLP (G27): softmax router, top-k renormalised with norm_topk_prob, no shared
// expert. GGUF "qwen3moe" (NEOX RoPE); llama.cpp always renormalises it.
#include "lemma/model/arch/arch_registry.h"
#include "lemma/model/arch/hf_fields.h"
#include "lemma/model/moe/moe_hf_fields.h"

namespace lemma {

namespace {
void read_qwen3_moe_fields(const nlohmann::json& j, ModelConfig& config) {
  hf::reject_if_true(j, "attention_bias", "qwen3moe");
  hf::read_qwen_sliding_window(j, config);
  hf::read_qwen_moe_fields(j, config);
}
}  // namespace

extern const ArchSpec kQwen3MoeArch{
    .name = "qwen3moe",
    .hf_architectures = {"Qwen3MoeForCausalLM"},
    .hf_model_types = {"qwen3_moe"},
    .gguf_arch = "qwen3moe",
    .gguf_rope_layout = RopeLayout::kHalfSplit,
    .qk_norm = true,
    .gguf_moe_normalize_top_k = true,
    .read_hf_fields = read_qwen3_moe_fields,
};

}  // namespace lemma
