// Small helpers the arch/ files share for reading optional config.json fields. Thread-safe (pure).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include <nlohmann/json.hpp>

#include "lemma/model/model_config.h"

namespace lemma::hf {

// The field's value, or nullopt when it is absent or null. Throws FormatError on a wrong type.
std::optional<int64_t> get_int(const nlohmann::json& j, std::string_view key);
std::optional<double> get_float(const nlohmann::json& j, std::string_view key);
std::optional<bool> get_bool(const nlohmann::json& j, std::string_view key);
std::optional<std::string> get_string(const nlohmann::json& j, std::string_view key);
// The field's value; throws FormatError naming it when absent or null.
int64_t required_int(const nlohmann::json& j, std::string_view key);

// Throws Unsupported when `key` is true (a feature lemma does not implement for `arch`).
void reject_if_true(const nlohmann::json& j, std::string_view key, std::string_view arch);

// Qwen2/Qwen3 style: when use_sliding_window is true, layers >= max_window_layers use sliding_window.
void read_qwen_sliding_window(const nlohmann::json& j, ModelConfig& config);

}  // namespace lemma::hf
