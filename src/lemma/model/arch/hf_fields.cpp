#include "lemma/model/arch/hf_fields.h"

#include <algorithm>

#include "lemma/base/error.h"

namespace lemma::hf {

namespace {
const nlohmann::json* lookup(const nlohmann::json& j, std::string_view key) {
  auto it = j.find(std::string(key));
  if (it == j.end() || it->is_null()) return nullptr;
  return &*it;
}
}  // namespace

std::optional<int64_t> get_int(const nlohmann::json& j, std::string_view key) {
  const auto* v = lookup(j, key);
  if (!v) return std::nullopt;
  if (v->is_number_integer()) return v->get<int64_t>();
  if (v->is_number_float() && v->get<double>() == static_cast<double>(static_cast<int64_t>(v->get<double>())))
    return static_cast<int64_t>(v->get<double>());
  fail<FormatError>("config.json: \"{}\" must be an integer, got {}", key, v->dump());
}

int64_t required_int(const nlohmann::json& j, std::string_view key) {
  const auto v = get_int(j, key);
  if (!v) fail<FormatError>("config.json: missing \"{}\"", key);
  return *v;
}

std::optional<double> get_float(const nlohmann::json& j, std::string_view key) {
  const auto* v = lookup(j, key);
  if (!v) return std::nullopt;
  if (v->is_number()) return v->get<double>();
  fail<FormatError>("config.json: \"{}\" must be a number, got {}", key, v->dump());
}

std::optional<bool> get_bool(const nlohmann::json& j, std::string_view key) {
  const auto* v = lookup(j, key);
  if (!v) return std::nullopt;
  if (v->is_boolean()) return v->get<bool>();
  fail<FormatError>("config.json: \"{}\" must be true or false, got {}", key, v->dump());
}

std::optional<std::string> get_string(const nlohmann::json& j, std::string_view key) {
  const auto* v = lookup(j, key);
  if (!v) return std::nullopt;
  if (v->is_string()) return v->get<std::string>();
  fail<FormatError>("config.json: \"{}\" must be a string, got {}", key, v->dump());
}

void reject_if_true(const nlohmann::json& j, std::string_view key, std::string_view arch) {
  if (get_bool(j, key).value_or(false))
    fail<Unsupported>("config.json: \"{}\": true is not supported for {} models", key, arch);
}

void read_qwen_sliding_window(const nlohmann::json& j, ModelConfig& config) {
  if (!get_bool(j, "use_sliding_window").value_or(false)) return;
  const auto window = get_int(j, "sliding_window");
  if (!window || *window <= 0) return;
  const int64_t first = get_int(j, "max_window_layers").value_or(config.num_layers);
  config.sliding_window.assign(static_cast<size_t>(config.num_layers), 0);
  for (int64_t l = std::max<int64_t>(first, 0); l < config.num_layers; ++l)
    config.sliding_window[static_cast<size_t>(l)] = *window;
}

}  // namespace lemma::hf
