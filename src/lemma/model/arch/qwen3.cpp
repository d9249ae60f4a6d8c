// Qwen3: per-head RMSNorm on q and k before RoPE, no biases, head_dim independent of hidden size.
// GGUF "qwen3" keeps HF row order (NEOX / half-split RoPE).
#include "lemma/model/arch/arch_registry.h"
#include "lemma/model/arch/hf_fields.h"

namespace lemma {

namespace {
void read_qwen3_fields(const nlohmann::json& j, ModelConfig& config) {
  hf::reject_if_true(j, "attention_bias", "qwen3");
  hf::read_qwen_sliding_window(j, config);
}
}  // namespace

extern const ArchSpec kQwen3Arch{
    .name = "qwen3",
    .hf_architectures = {"Qwen3ForCausalLM"},
    .hf_model_types = {"qwen3"},
    .gguf_arch = "qwen3",
    .gguf_rope_layout = RopeLayout::kHalfSplit,
    .qk_norm = true,
    .read_hf_fields = read_qwen3_fields,
};

}  // namespace lemma
