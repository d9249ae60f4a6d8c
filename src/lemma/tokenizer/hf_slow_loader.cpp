// Tokenizer::from_hf_vocab_merges: the "slow" GPT-2 file pair (vocab.json + merges.txt) that
// older byte-level BPE repositories ship instead of tokenizer.json. It is turned into the
// tokenizer.json that transformers' converter would write (ByteLevel pre-tokenizer with the
// GPT-2 regex, BPE, ByteLevel decoder, the config's special tokens as added tokens).
#include <sstream>

#include <nlohmann/json.hpp>

#include "lemma/base/error.h"
#include "lemma/tokenizer/tokenizer.h"

namespace lemma {
namespace {

using json = nlohmann::json;

std::optional<std::string> token_content(const json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_object() && v.contains("content")) return v.at("content").get<std::string>();
  return std::nullopt;
}

}  // namespace

Tokenizer Tokenizer::from_hf_vocab_merges(const std::string& vocab_json_text, const std::string& merges_txt_text,
                                          const std::string& config_text) {
  json vocab, config = json::object();
  try {
    vocab = json::parse(vocab_json_text);
    if (!config_text.empty()) config = json::parse(config_text);
  } catch (const json::exception& e) {
    fail<FormatError>("vocab.json / tokenizer_config.json does not parse: {}", e.what());
  }
  json merges = json::array();
  std::istringstream lines(merges_txt_text);
  std::string line;
  while (std::getline(lines, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty() || line.rfind("#version", 0) == 0) continue;
    merges.push_back(line);
  }
  // Special tokens: tokenizer_config's added_tokens_decoder, else its named special tokens.
  json added = json::array();
  if (config.contains("added_tokens_decoder")) {
    for (const auto& [id, t] : config.at("added_tokens_decoder").items()) {
      json a = t;
      a["id"] = std::stoi(id);
      added.push_back(a);
    }
  } else {
    for (const char* key : {"bos_token", "eos_token", "unk_token", "pad_token"}) {
      if (!config.contains(key)) continue;
      auto content = token_content(config.at(key));
      if (!content || !vocab.contains(*content)) continue;
      bool seen = false;
      for (const auto& a : added) seen = seen || a.at("content") == *content;
      if (!seen) {
        added.push_back({{"id", vocab.at(*content)}, {"content", *content}, {"special", true},
                         {"normalized", false}, {"lstrip", false}, {"rstrip", false}, {"single_word", false}});
      }
    }
  }
  const json tokenizer = {
      {"added_tokens", added},
      {"normalizer", nullptr},
      {"pre_tokenizer",
       {{"type", "ByteLevel"}, {"add_prefix_space", config.value("add_prefix_space", false)}, {"use_regex", true}}},
      {"post_processor", nullptr},
      {"decoder", {{"type", "ByteLevel"}}},
      {"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", merges}}},
  };
  return from_hf_json(tokenizer.dump(), config_text);
}

}  // namespace lemma
