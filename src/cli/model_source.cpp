#include "cli/model_source.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "lemma/base/error.h"
#include "lemma/tokenizer/gguf_metadata.h"

namespace lemma::cli {

namespace fs = std::filesystem;

namespace {

bool has_gguf_magic(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  char magic[4] = {};
  return in.read(magic, 4) && std::string_view(magic, 4) == "GGUF";
}

std::string read_if_exists(const fs::path& path) {
  return fs::exists(path) ? read_text_file(path.string()) : std::string();
}

// Adapts io's GgufFile to the tokenizer's narrow metadata interface.
class GgufFileLookup final : public GgufMetadataLookup {
 public:
  explicit GgufFileLookup(const GgufFile& file) : file_(file) {}
  std::optional<std::string> get_string(std::string_view key) const override {
    const auto* v = file_.find(key);
    if (!v || v->is_array() || v->type() != GgufValueType::kString) return std::nullopt;
    return v->as_string();
  }
  std::optional<int64_t> get_int(std::string_view key) const override {
    const auto* v = file_.find(key);
    if (!v || v->is_array()) return std::nullopt;
    try {
      return v->as_int();
    } catch (const Error&) {
      return std::nullopt;
    }
  }
  std::optional<bool> get_bool(std::string_view key) const override {
    const auto* v = file_.find(key);
    if (!v || v->is_array() || v->type() != GgufValueType::kBool) return std::nullopt;
    return v->as_bool();
  }
  std::optional<std::vector<std::string>> get_strings(std::string_view key) const override {
    const auto* v = file_.find(key);
    if (!v || !v->is_array() || v->element_type() != GgufValueType::kString) return std::nullopt;
    return v->as_strings();
  }
  std::optional<std::vector<float>> get_floats(std::string_view key) const override {
    const auto* v = file_.find(key);
    if (!v || !v->is_array()) return std::nullopt;
    try {
      return v->as_floats();
    } catch (const Error&) {
      return std::nullopt;
    }
  }
  std::optional<std::vector<int64_t>> get_ints(std::string_view key) const override {
    const auto* v = file_.find(key);
    if (!v || !v->is_array()) return std::nullopt;
    try {
      return v->as_ints();
    } catch (const Error&) {
      return std::nullopt;
    }
  }

 private:
  const GgufFile& file_;
};

// tokenizer_config.json writes special tokens either as a string or as an AddedToken object.
std::optional<std::string> token_text_field(const nlohmann::json& config, const char* key) {
  if (!config.is_object() || !config.contains(key)) return std::nullopt;
  const auto& v = config[key];
  if (v.is_string()) return v.get<std::string>();
  if (v.is_object() && v.contains("content") && v["content"].is_string()) return v["content"].get<std::string>();
  return std::nullopt;
}

}  // namespace

std::string read_text_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail<IoError>("cannot read {}", path);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

bool ModelSource::has_weights() const {
  return safetensors.has_value() || (gguf.has_value() && !gguf->tensors().empty());
}

ModelSource open_model_source(const std::string& path, LoadMode mode) {
  ModelSource source;
  source.path = path;
  const fs::path p(path);
  if (!fs::exists(p)) fail<IoError>("--model {}: no such file or directory", path);
  if (fs::is_regular_file(p)) {
    if (!has_gguf_magic(p))
      fail<FormatError>("--model {}: not a GGUF file (no GGUF magic); give a .gguf file or an HF directory", path);
    source.format = ModelFormat::kGguf;
    source.gguf = GgufFile::open(path, mode);
    return source;
  }
  if (!fs::is_directory(p)) fail<IoError>("--model {}: neither a file nor a directory", path);
  source.format = ModelFormat::kHfDirectory;
  source.hf_config_json = read_if_exists(p / "config.json");
  source.tokenizer_config_json = read_if_exists(p / "tokenizer_config.json");
  const bool has_single = fs::exists(p / "model.safetensors");
  const bool has_index = fs::exists(p / "model.safetensors.index.json");
  if (has_single || has_index) source.safetensors = SafetensorsCheckpoint::open(path, mode);
  if (!source.safetensors && !fs::exists(p / "tokenizer.json"))
    fail<FormatError>(
        "--model {}: directory has neither model.safetensors(.index.json) nor tokenizer.json; expected an HF "
        "model directory or a tokenizer-only directory",
        path);
  return source;
}

Tokenizer load_tokenizer(const ModelSource& source) {
  if (source.gguf) {
    if (!source.gguf->find("tokenizer.ggml.model"))
      fail<FormatError>("{}: GGUF file has no tokenizer (tokenizer.ggml.model is missing)", source.path);
    return Tokenizer::from_gguf_metadata(GgufFileLookup(*source.gguf));
  }
  const fs::path dir(source.path);
  if (!fs::exists(dir / "tokenizer.json"))
    fail<FormatError>("{}: no tokenizer.json in the model directory", source.path);
  return Tokenizer::from_hf_dir(source.path);
}

std::optional<std::string> find_chat_template(const ModelSource& source) {
  if (source.gguf) return source.gguf->get_string("tokenizer.chat_template");
  if (source.tokenizer_config_json.empty()) return std::nullopt;
  const auto config = nlohmann::json::parse(source.tokenizer_config_json, nullptr, false);
  if (config.is_discarded())
    fail<FormatError>("{}/tokenizer_config.json: invalid JSON", source.path);
  if (!config.is_object() || !config.contains("chat_template")) {
    // Newer transformers versions store it beside the config.
    const auto jinja = fs::path(source.path) / "chat_template.jinja";
    if (fs::exists(jinja)) return read_text_file(jinja.string());
    return std::nullopt;
  }
  const auto& t = config["chat_template"];
  if (t.is_string()) return t.get<std::string>();
  if (t.is_array()) {
    // A list of {"name", "template"}: the one named "default" is the chat template.
    for (const auto& item : t)
      if (item.is_object() && item.value("name", "") == "default" && item.contains("template"))
        return item["template"].get<std::string>();
  }
  fail<FormatError>("{}/tokenizer_config.json: chat_template is neither a string nor a list with a \"default\" entry",
                    source.path);
}

SpecialTokenTexts special_token_texts(const ModelSource& source, const Tokenizer* tokenizer) {
  SpecialTokenTexts texts;
  if (!source.tokenizer_config_json.empty()) {
    const auto config = nlohmann::json::parse(source.tokenizer_config_json, nullptr, false);
    texts.bos = token_text_field(config, "bos_token");
    texts.eos = token_text_field(config, "eos_token");
  }
  if (tokenizer) {
    if (!texts.bos && tokenizer->bos_id()) texts.bos = std::string(tokenizer->token_text(*tokenizer->bos_id()));
    if (!texts.eos && tokenizer->eos_id()) texts.eos = std::string(tokenizer->token_text(*tokenizer->eos_id()));
  }
  return texts;
}

}  // namespace lemma::cli
