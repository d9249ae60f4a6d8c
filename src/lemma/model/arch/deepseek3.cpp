// DeepSeek-V3: DeepSeek-V2's latent attention (G28, with q_lora) and MoE with a sigmoid router,
// noaux_tc (e_score_correction_bias, groups scored by their two best experts), renormalised weights
// always times routed_scaling_factor. Its multi-token-prediction layers (G30) sit after the main
// layers as model.layers.{L..}. Its GGUFs say "deepseek2" (arch/deepseek2.cpp reads them).
#include "lemma/model/arch/arch_registry.h"
#include "lemma/model/arch/deepseek_fields.h"

namespace lemma {

namespace {
void read_deepseek3_fields(const nlohmann::json& j, ModelConfig& config) { hf::read_deepseek_fields(j, config, true); }
}  // namespace

extern const ArchSpec kDeepseek3Arch{
    .name = "deepseek3",
    .hf_architectures = {"DeepseekV3ForCausalLM"},
    .hf_model_types = {"deepseek_v3"},
    .gguf_arch = "",
    .read_hf_fields = read_deepseek3_fields,
};

}  // namespace lemma
