// Llama (1/2/3): RMSNorm, RoPE, GQA, SwiGLU, no biases. GGUF "llama" stores q/k rows permuted for
// interleaved RoPE (llama.cpp's convert_hf_to_gguf). Mistral GGUFs also use this arch name.
#include "lemma/model/arch/arch_registry.h"
#include "lemma/model/arch/hf_fields.h"

namespace lemma {

namespace {
void read_llama_fields(const nlohmann::json& j, ModelConfig& config) {
  hf::reject_if_true(j, "attention_bias", "llama");  // would add an o_proj bias too
  hf::reject_if_true(j, "mlp_bias", "llama");
}
}  // namespace

extern const ArchSpec kLlamaArch{
    .name = "llama",
    .hf_architectures = {"LlamaForCausalLM"},
    .hf_model_types = {"llama"},
    .gguf_arch = "llama",
    .gguf_rope_layout = RopeLayout::kInterleaved,
    .gguf_moe_normalize_top_k = true,  // Mixtral GGUFs are "llama" with expert keys
    .read_hf_fields = read_llama_fields,
};

}  // namespace lemma
