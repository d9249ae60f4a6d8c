// Tokenizer::from_gguf_metadata: maps tokenizer.ggml.* onto the same pipeline as tokenizer.json.
//  - model "gpt2":  Split regexes of tokenizer.ggml.pre + ByteLevel, merge-rank BPE, ByteLevel decoder.
//  - model "llama": SentencePiece normalizer (dummy prefix, " " -> "▁"), score-driven BPE with
//                   byte fallback, SentencePiece decoder.
// Control / unknown tokens become special added tokens, user-defined ones always-matched added
// tokens, as llama.cpp's partitioning treats them.
#include <algorithm>
#include <cctype>

#include "lemma/base/error.h"
#include "lemma/base/logging.h"
#include "lemma/tokenizer/bpe_model.h"
#include "lemma/tokenizer/gguf_pre_tokenizers.h"
#include "lemma/tokenizer/pipeline.h"
#include "lemma/tokenizer/spm_model.h"

namespace lemma {
namespace {

std::optional<int32_t> id_key(const GgufMetadataLookup& md, const tok::Vocab& vocab, const char* key) {
  auto v = md.get_int(key);
  // -1 (often stored as uint32 0xFFFFFFFF) is the converters' way of saying "none".
  if (!v || *v == -1 || *v == 0xFFFFFFFF) return std::nullopt;
  if (*v < 0 || *v >= vocab.size()) {
    log().warn("tokenizer: GGUF {} = {} is outside the vocabulary; ignored", key, *v);
    return std::nullopt;
  }
  return static_cast<int32_t>(*v);
}

std::vector<std::pair<std::string, std::string>> split_merges(const std::vector<std::string>& merges) {
  std::vector<std::pair<std::string, std::string>> out;
  out.reserve(merges.size());
  for (const auto& m : merges) {
    const size_t space = m.find(' ', 1);  // a merge's left part may itself start with ' '
    if (space == std::string::npos) fail<FormatError>("GGUF tokenizer.ggml.merges entry '{}' has no space", m);
    out.emplace_back(m.substr(0, space), m.substr(space + 1));
  }
  return out;
}

// Token attributes GGUF cannot store but HF's tokenizer.json has, keyed by general.name as
// llama.cpp does: Phi-3's turn tokens (and "</s>") swallow the whitespace after them.
void apply_known_token_flags(const GgufMetadataLookup& md, std::vector<tok::AddedToken>& added) {
  std::string name = md.get_string("general.name").value_or("");
  std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
  if (name.find("phi-3") != std::string::npos || name.find("phi3") != std::string::npos) {
    for (auto& a : added) {
      a.rstrip = (a.special || a.content == "</s>") && a.content != "<unk>" && a.content != "<s>" &&
                 a.content != "<|endoftext|>";
    }
  }
}

tok::PreTokenizerPtr build_pre_tokenizer(const tok::GgufPreTokenizer& pre) {
  std::vector<tok::PreTokenizerPtr> steps;
  for (const auto& re : pre.regexes) {
    steps.push_back(tok::make_split(re, false, tok::SplitBehavior::kIsolated, false));
  }
  steps.push_back(tok::make_byte_level(false, false));
  return tok::make_sequence(std::move(steps));
}

}  // namespace

Tokenizer Tokenizer::from_gguf_metadata(const GgufMetadataLookup& md) {
  auto p = std::make_unique<tok::Pipeline>();
  p->source = "gguf";
  const std::string model = md.get_string("tokenizer.ggml.model").value_or("");
  auto tokens = md.get_strings("tokenizer.ggml.tokens");
  if (!tokens || tokens->empty()) fail<FormatError>("GGUF has no tokenizer.ggml.tokens");
  std::vector<TokenType> types;
  if (auto tt = md.get_ints("tokenizer.ggml.token_type")) {
    if (tt->size() != tokens->size()) {
      fail<FormatError>("GGUF token_type has {} entries for {} tokens", tt->size(), tokens->size());
    }
    types.reserve(tt->size());
    for (int64_t t : *tt) types.push_back(t >= 1 && t <= 6 ? static_cast<TokenType>(t) : TokenType::kNormal);
  }
  p->vocab = tok::Vocab(std::move(*tokens), std::move(types));

  // Added tokens from token types.
  std::vector<tok::AddedToken> added;
  for (int32_t id = 0; id < p->vocab.size(); ++id) {
    const TokenType t = p->vocab.type(id);
    if (t != TokenType::kControl && t != TokenType::kUserDefined && t != TokenType::kUnknown) continue;
    tok::AddedToken a;
    a.id = id;
    a.content = p->vocab.text(id);
    a.special = t != TokenType::kUserDefined;
    added.push_back(std::move(a));
  }
  apply_known_token_flags(md, added);
  p->added = tok::AddedTokens(std::move(added));

  bool add_bos = false;
  if (model == "gpt2") {
    const std::string pre_name = md.get_string("tokenizer.ggml.pre").value_or("default");
    const tok::GgufPreTokenizer* pre = tok::find_gguf_pre_tokenizer(pre_name);
    if (!pre) {
      log().warn("tokenizer: unknown tokenizer.ggml.pre '{}'; using the default split regexes", pre_name);
      pre = &tok::default_gguf_pre_tokenizer();
    }
    auto merges = md.get_strings("tokenizer.ggml.merges");
    if (!merges) fail<FormatError>("GGUF BPE tokenizer has no tokenizer.ggml.merges");
    tok::BpeOptions opts;
    opts.ignore_merges = pre->ignore_merges;
    p->model = std::make_unique<tok::BpeModel>(p->vocab, split_merges(*merges), opts);
    p->pre_tokenizer = build_pre_tokenizer(*pre);
    p->decoder = tok::make_byte_level_decoder();
    p->model_kind = fmt::format("byte-level BPE (pre '{}')", pre_name);
    add_bos = pre->add_bos;
  } else if (model == "llama") {
    const bool prefix = md.get_bool("tokenizer.ggml.add_space_prefix").value_or(true);
    p->unk = id_key(md, p->vocab, "tokenizer.ggml.unknown_token_id");
    if (!p->unk) p->unk = p->vocab.find("<unk>");
    auto scores = md.get_floats("tokenizer.ggml.scores").value_or(std::vector<float>{});
    p->normalizer = tok::make_spm_normalizer(prefix);
    p->model = std::make_unique<tok::SpmModel>(p->vocab, std::move(scores), p->unk);
    p->decoder = tok::make_spm_decoder(prefix);
    p->model_kind = "SentencePiece BPE";
    add_bos = true;
    p->bos = p->vocab.find("<s>");
    p->eos = p->vocab.find("</s>");
  } else {
    fail<Unsupported>("GGUF tokenizer.ggml.model '{}' is not supported (gpt2 and llama are)", model);
  }

  if (auto v = id_key(md, p->vocab, "tokenizer.ggml.bos_token_id")) p->bos = v;
  if (auto v = id_key(md, p->vocab, "tokenizer.ggml.eos_token_id")) p->eos = v;
  if (auto v = id_key(md, p->vocab, "tokenizer.ggml.unknown_token_id")) p->unk = v;
  p->pad = id_key(md, p->vocab, "tokenizer.ggml.padding_token_id");
  p->eot = id_key(md, p->vocab, "tokenizer.ggml.eot_token_id");
  if (!p->eot) {
    for (const char* name : {"<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>"}) {
      if (auto id = p->vocab.find(name); id && !p->eot) p->eot = id;
    }
  }
  add_bos = md.get_bool("tokenizer.ggml.add_bos_token").value_or(add_bos);
  const bool add_eos = md.get_bool("tokenizer.ggml.add_eos_token").value_or(false);
  if (add_bos && p->bos) p->post.prefix.push_back(*p->bos);
  if (add_eos && p->eos) p->post.suffix.push_back(*p->eos);
  return tok::Pipeline::finish(std::move(p));
}

}  // namespace lemma
