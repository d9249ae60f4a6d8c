// DeepSeek-V2 (and V2-Lite, which has no q_lora: q_proj): multi-head latent attention (G28) with a
// latent KV cache, YaRN with DeepSeek's mscale, and the DeepSeek MoE (softmax router, group-limited
// greedy top-k, shared experts, first_k_dense_replace dense layers). GGUF "deepseek2" (which
// llama.cpp also uses for V3: its reader tells them apart by the gating function).
#include "lemma/model/arch/arch_registry.h"
#include "lemma/model/arch/deepseek_fields.h"

namespace lemma {

namespace {
void read_deepseek2_fields(const nlohmann::json& j, ModelConfig& config) { hf::read_deepseek_fields(j, config, false); }
}  // namespace

extern const ArchSpec kDeepseek2Arch{
    .name = "deepseek2",
    .hf_architectures = {"DeepseekV2ForCausalLM"},
    .hf_model_types = {"deepseek_v2"},
    .gguf_arch = "deepseek2",
    .gguf_rope_layout = RopeLayout::kInterleaved,
    .read_hf_fields = read_deepseek2_fields,
};

}  // namespace lemma
