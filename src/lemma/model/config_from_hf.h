// Reading a ModelConfig from a Hugging Face config.json. Common fields are read here; each
// architecture's own fields by its ArchSpec (arch/). Thread-safe (pure functions).
#pragma once

#include <filesystem>

#include <nlohmann/json_fwd.hpp>

#include "lemma/model/model_config.h"

namespace lemma {

// Throws Unsupported for unknown architectures or unknown values of fields that change the math
// (hidden_act, rope_scaling type, partial rotary, biases the arch lacks), FormatError for wrong
// types. Fields that do not affect inference are ignored. RoPE layout is half-split (HF order).
ModelConfig config_from_hf_json(const nlohmann::json& config_json);
// Reads and parses `path` (a config.json, or a directory holding one).
ModelConfig config_from_hf_file(const std::filesystem::path& path);

// The "rope_scaling" (or transformers-5 "rope_parameters") object of config.json -> RopeScaling.
// `max_position_embeddings` is needed for YaRN's factor as transformers derives it.
RopeScaling rope_scaling_from_hf(const nlohmann::json& rope_scaling, int64_t max_position_embeddings);

}  // namespace lemma
