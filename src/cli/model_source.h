// What `--model M` names: an HF directory, a .gguf file, or a holder of just a tokenizer.
// Opens the weights (if any), the tokenizer and the chat template. Not thread-safe to build;
// immutable afterwards.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "lemma/base/mapped_file.h"
#include "lemma/io/gguf.h"
#include "lemma/io/safetensors_checkpoint.h"
#include "lemma/tokenizer/tokenizer.h"

namespace lemma::cli {

enum class ModelFormat { kGguf, kHfDirectory };

struct ModelSource {
  std::string path;
  ModelFormat format = ModelFormat::kGguf;
  std::optional<GgufFile> gguf;                         // for .gguf files (vocab-only ones too)
  std::optional<SafetensorsCheckpoint> safetensors;     // for HF directories that have weights
  std::string hf_config_json;                           // config.json text; empty when absent
  std::string tokenizer_config_json;                    // tokenizer_config.json text; empty when absent

  bool has_weights() const;
};

// Opens the files `path` names; throws lemma::Error naming what is missing or malformed.
ModelSource open_model_source(const std::string& path, LoadMode mode = LoadMode::kLazyMmap);

// The model's tokenizer; throws when the source has none.
Tokenizer load_tokenizer(const ModelSource& source);

// The model's chat template text (tokenizer_config.json "chat_template", or GGUF
// tokenizer.chat_template); nullopt when the model has none.
std::optional<std::string> find_chat_template(const ModelSource& source);

// The BOS/EOS token strings a chat template sees (tokenizer_config.json values, else the vocab
// entries of the tokenizer's bos/eos ids); nullopt when the model does not define one.
struct SpecialTokenTexts {
  std::optional<std::string> bos, eos;
};
SpecialTokenTexts special_token_texts(const ModelSource& source, const Tokenizer* tokenizer);

std::string read_text_file(const std::string& path);

}  // namespace lemma::cli
