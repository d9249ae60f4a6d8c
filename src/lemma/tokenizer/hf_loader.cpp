// Tokenizer::from_hf_json / from_hf_dir: builds the pipeline tokenizer.json describes, with the
// BOS/EOS and clean-up settings of tokenizer_config.json layered on top as transformers does.
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "lemma/base/error.h"
#include "lemma/tokenizer/bpe_model.h"
#include "lemma/tokenizer/pipeline.h"

namespace lemma {
namespace {

using json = nlohmann::json;

std::string read_text_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail<IoError>("cannot open {}", path.string());
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// tokenizer_config.json names tokens either as a string or as an AddedToken object.
std::optional<std::string> config_token(const json& config, const char* key) {
  if (!config.contains(key)) return std::nullopt;
  const auto& v = config.at(key);
  if (v.is_string()) return v.get<std::string>();
  if (v.is_object() && v.contains("content")) return v.at("content").get<std::string>();
  return std::nullopt;
}

std::vector<std::pair<std::string, std::string>> parse_merges(const json& merges) {
  std::vector<std::pair<std::string, std::string>> out;
  out.reserve(merges.size());
  for (const auto& m : merges) {
    if (m.is_array()) {  // newer format: ["a", "b"]
      out.emplace_back(m.at(0).get<std::string>(), m.at(1).get<std::string>());
      continue;
    }
    const auto& s = m.get_ref<const std::string&>();
    const size_t space = s.find(' ', 1);
    if (space == std::string::npos) fail<FormatError>("tokenizer.json merge '{}' has no space", s);
    out.emplace_back(s.substr(0, space), s.substr(space + 1));
  }
  return out;
}

// Applies tokenizer_config's add_bos_token / add_eos_token to the post-processor, as
// transformers' Llama/Gemma fast tokenizers rebuild their template from those flags.
void apply_config_flags(tok::Pipeline& p, const json& config) {
  if (config.contains("add_bos_token") && config.at("add_bos_token").is_boolean() && p.bos) {
    const bool want = config.at("add_bos_token").get<bool>();
    const bool has = !p.post.prefix.empty() && p.post.prefix.front() == *p.bos;
    if (want && !has) p.post.prefix.insert(p.post.prefix.begin(), *p.bos);
    if (!want && has) p.post.prefix.erase(p.post.prefix.begin());
  }
  if (config.contains("add_eos_token") && config.at("add_eos_token").is_boolean() && p.eos) {
    const bool want = config.at("add_eos_token").get<bool>();
    const bool has = !p.post.suffix.empty() && p.post.suffix.back() == *p.eos;
    if (want && !has) p.post.suffix.push_back(*p.eos);
    if (!want && has) p.post.suffix.pop_back();
  }
}

// transformers' byte-level fast tokenizers rebuild their ByteLevel pre-tokenizer when
// tokenizer_config.json's add_prefix_space differs from tokenizer.json's.
void override_add_prefix_space(json& pre, bool value) {
  if (pre.is_null()) return;
  if (pre.value("type", "") == "ByteLevel") pre["add_prefix_space"] = value;
  if (pre.contains("pretokenizers")) {
    for (auto& sub : pre.at("pretokenizers")) override_add_prefix_space(sub, value);
  }
}

}  // namespace

Tokenizer Tokenizer::from_hf_dir(const std::string& dir) {
  const std::filesystem::path d(dir);
  std::string tc;
  if (std::filesystem::exists(d / "tokenizer_config.json")) tc = read_text_file(d / "tokenizer_config.json");
  if (!std::filesystem::exists(d / "tokenizer.json") && std::filesystem::exists(d / "vocab.json") &&
      std::filesystem::exists(d / "merges.txt")) {
    return from_hf_vocab_merges(read_text_file(d / "vocab.json"), read_text_file(d / "merges.txt"), tc);
  }
  return from_hf_json(read_text_file(d / "tokenizer.json"), tc);
}

Tokenizer Tokenizer::from_hf_json(const std::string& tokenizer_json_text, const std::string& config_text) {
  json j, config = json::object();
  try {
    j = json::parse(tokenizer_json_text);
    if (!config_text.empty()) config = json::parse(config_text);
  } catch (const json::exception& e) {
    fail<FormatError>("tokenizer JSON does not parse: {}", e.what());
  }
  try {
    auto p = std::make_unique<tok::Pipeline>();
    p->source = "tokenizer.json";
    const auto& m = j.at("model");
    const std::string type = m.value("type", "BPE");
    if (type != "BPE") fail<Unsupported>("tokenizer.json model type '{}' is not supported (only BPE)", type);
    p->model_kind = "BPE";

    // Vocabulary: model vocab, then added tokens (which may extend it).
    const auto& vocab_json = m.at("vocab");
    std::vector<std::string> tokens;
    for (const auto& [text, id_json] : vocab_json.items()) {
      const auto id = id_json.get<int64_t>();
      if (id < 0 || id > 10'000'000) fail<FormatError>("tokenizer.json vocab id {} out of range", id);
      if (static_cast<size_t>(id) >= tokens.size()) tokens.resize(static_cast<size_t>(id) + 1);
      tokens[static_cast<size_t>(id)] = text;
    }
    std::vector<TokenType> types(tokens.size(), TokenType::kNormal);
    const bool byte_fallback = m.value("byte_fallback", false);
    if (byte_fallback) {
      for (size_t i = 0; i < tokens.size(); ++i) {
        if (tok::parse_byte_token(tokens[i])) types[i] = TokenType::kByte;
      }
    }
    p->vocab = tok::Vocab(std::move(tokens), std::move(types));

    std::vector<tok::AddedToken> added;
    for (const auto& a : j.value("added_tokens", json::array())) {
      tok::AddedToken t;
      t.id = a.at("id").get<int32_t>();
      t.content = a.at("content").get<std::string>();
      t.special = a.value("special", false);
      t.lstrip = a.value("lstrip", false);
      t.rstrip = a.value("rstrip", false);
      t.single_word = a.value("single_word", false);
      t.normalized = a.value("normalized", !t.special);
      p->vocab.set(t.id, t.content, t.special ? TokenType::kControl : TokenType::kUserDefined);
      added.push_back(std::move(t));
    }
    // Normalized added tokens are matched in their normalized form, so the normalizer comes first.
    p->normalizer = tok::normalizer_from_json(j.value("normalizer", json()));
    p->added = tok::AddedTokens(std::move(added), p->normalizer.get());

    std::optional<std::string> unk_text;
    if (m.contains("unk_token") && m.at("unk_token").is_string()) unk_text = m.at("unk_token").get<std::string>();
    if (!unk_text) unk_text = config_token(config, "unk_token");
    if (unk_text) {
      p->unk = p->vocab.find(*unk_text);
      // Only a special added unk is skipped by decode(skip_special), as in HF; keep it special.
      if (p->unk && p->vocab.type(*p->unk) == TokenType::kControl) p->vocab.set(*p->unk, *unk_text, TokenType::kUnknown);
    }

    tok::BpeOptions opts;
    opts.byte_fallback = byte_fallback;
    opts.unk_id = m.contains("unk_token") && m.at("unk_token").is_string() ? p->unk : std::nullopt;
    opts.fuse_unk = m.value("fuse_unk", false);
    opts.ignore_merges = m.value("ignore_merges", false);
    if (m.contains("continuing_subword_prefix") && m.at("continuing_subword_prefix").is_string()) {
      opts.continuing_subword_prefix = m.at("continuing_subword_prefix").get<std::string>();
    }
    if (m.contains("end_of_word_suffix") && m.at("end_of_word_suffix").is_string()) {
      opts.end_of_word_suffix = m.at("end_of_word_suffix").get<std::string>();
    }
    p->model = std::make_unique<tok::BpeModel>(p->vocab, parse_merges(m.value("merges", json::array())), opts);

    json pre = j.value("pre_tokenizer", json());
    if (config.contains("add_prefix_space") && config.at("add_prefix_space").is_boolean()) {
      override_add_prefix_space(pre, config.at("add_prefix_space").get<bool>());
    }
    p->pre_tokenizer = tok::pre_tokenizer_from_json(pre);
    p->decoder = tok::decoder_from_json(j.value("decoder", json()));
    p->post = tok::post_processor_from_json(j.value("post_processor", json()), p->vocab);

    auto lookup = [&](const char* key) -> std::optional<int32_t> {
      auto text = config_token(config, key);
      return text ? p->vocab.find(*text) : std::nullopt;
    };
    p->bos = lookup("bos_token");
    p->eos = lookup("eos_token");
    p->pad = lookup("pad_token");
    // Without a config, a template's leading special token is the BOS (Llama-style files).
    if (!p->bos && !p->post.prefix.empty()) p->bos = p->post.prefix.front();
    if (!p->eos && !p->post.suffix.empty()) p->eos = p->post.suffix.back();
    for (const char* name : {"<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>"}) {
      if (auto id = p->vocab.find(name); id && !p->eot) p->eot = id;
    }
    apply_config_flags(*p, config);
    p->clean_up_spaces = config.value("clean_up_tokenization_spaces", false);
    return tok::Pipeline::finish(std::move(p));
  } catch (const json::exception& e) {
    fail<FormatError>("tokenizer.json is malformed: {}", e.what());
  }
}

}  // namespace lemma
