// Mistral: Llama with an optional sliding attention window on every layer (config "sliding_window").
// llama.cpp converts Mistral checkpoints to the GGUF "llama" arch, so no GGUF name here.
#include "lemma/model/arch/arch_registry.h"
#include "lemma/model/arch/hf_fields.h"

namespace lemma {

namespace {
void read_mistral_fields(const nlohmann::json& j, ModelConfig& config) {
  hf::reject_if_true(j, "attention_bias", "mistral");
  hf::reject_if_true(j, "mlp_bias", "mistral");
  if (const auto window = hf::get_int(j, "sliding_window"); window && *window > 0)
    config.sliding_window.assign(static_cast<size_t>(config.num_layers), *window);
}
}  // namespace

extern const ArchSpec kMistralArch{
    .name = "mistral",
    .hf_architectures = {"MistralForCausalLM"},
    .hf_model_types = {"mistral"},
    .gguf_arch = "",
    .read_hf_fields = read_mistral_fields,
};

}  // namespace lemma
