#include "lemma/model/arch/arch_registry.h"

#include <array>

namespace lemma {

extern const ArchSpec kLlamaArch;
extern const ArchSpec kMistralArch;
extern const ArchSpec kQwen2Arch;
extern const ArchSpec kQwen3Arch;
extern const ArchSpec kMixtralArch;
extern const ArchSpec kQwen2MoeArch;
extern const ArchSpec kQwen3MoeArch;
extern const ArchSpec kDeepseek2Arch;
extern const ArchSpec kDeepseek3Arch;

namespace {
// One line per architecture.
const std::array<const ArchSpec*, 9> kArchitectures = {
    &kLlamaArch,
    &kMistralArch,
    &kQwen2Arch,
    &kQwen3Arch,
    &kMixtralArch,
    &kQwen2MoeArch,
    &kQwen3MoeArch,
    &kDeepseek2Arch,
    &kDeepseek3Arch,
};
}  // namespace

std::span<const ArchSpec* const> all_architectures() { return kArchitectures; }

const ArchSpec* find_arch_by_name(std::string_view name) {
  for (const ArchSpec* a : kArchitectures)
    if (a->name == name) return a;
  return nullptr;
}

const ArchSpec* find_arch_by_hf(std::string_view hf_name) {
  for (const ArchSpec* a : kArchitectures) {
    for (auto n : a->hf_architectures)
      if (n == hf_name) return a;
    for (auto n : a->hf_model_types)
      if (n == hf_name) return a;
  }
  return nullptr;
}

const ArchSpec* find_arch_by_gguf(std::string_view gguf_arch) {
  for (const ArchSpec* a : kArchitectures)
    if (!a->gguf_arch.empty() && a->gguf_arch == gguf_arch) return a;
  return nullptr;
}

std::string supported_arch_names() {
  std::string s;
  for (const ArchSpec* a : kArchitectures) {
    if (!s.empty()) s += ", ";
    s += a->name;
  }
  return s;
}

}  // namespace lemma
