// Mixtral: Llama attention (optional sliding window on every layer) with a mixture-of-experts MLP
// (G27): softmax router, top-k renormalised. llama.cpp converts it to the GGUF "llama" arch with
// expert keys, so no GGUF name here (a llama GGUF with llama.expert_count is read as MoE).
#include "lemma/model/arch/arch_registry.h"
#include "lemma/model/arch/hf_fields.h"
#include "lemma/model/moe/moe_hf_fields.h"

namespace lemma {

namespace {
void read_mixtral_fields(const nlohmann::json& j, ModelConfig& config) {
  if (const auto window = hf::get_int(j, "sliding_window"); window && *window > 0)
    config.sliding_window.assign(static_cast<size_t>(config.num_layers), *window);
  hf::read_mixtral_moe_fields(j, config);
}
}  // namespace

extern const ArchSpec kMixtralArch{
    .name = "mixtral",
    .hf_architectures = {"MixtralForCausalLM"},
    .hf_model_types = {"mixtral"},
    .gguf_arch = "",
    .read_hf_fields = read_mixtral_fields,
};

}  // namespace lemma
