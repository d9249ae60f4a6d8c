// Qwen2 / Qwen2.5: Llama with biases on the q/k/v projections; optional sliding window on the
// layers from max_window_layers on. GGUF "qwen2" keeps HF row order (NEOX / half-split RoPE).
#include "lemma/model/arch/arch_registry.h"
#include "lemma/model/arch/hf_fields.h"

namespace lemma {

namespace {
void read_qwen2_fields(const nlohmann::json& j, ModelConfig& config) {
  config.head_dim = config.hidden_size / config.num_heads;  // transformers' Qwen2 ignores "head_dim"
  config.rope.rotary_dim = config.head_dim;
  hf::read_qwen_sliding_window(j, config);
}
}  // namespace

extern const ArchSpec kQwen2Arch{
    .name = "qwen2",
    .hf_architectures = {"Qwen2ForCausalLM"},
    .hf_model_types = {"qwen2"},
    .gguf_arch = "qwen2",
    .gguf_rope_layout = RopeLayout::kHalfSplit,
    .qkv_bias = true,
    .read_hf_fields = read_qwen2_fields,
};

}  // namespace lemma
