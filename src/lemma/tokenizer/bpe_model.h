// Merge-rank BPE (HF "BPE" model; GGUF tokenizer.ggml.model = "gpt2"): repeatedly merges the
// adjacent pair with the lowest merge rank (leftmost first on ties) using a priority queue,
// so a word of n characters costs O(n log n). Optional SentencePiece-style byte fallback.
// Thread-safe: the word cache is guarded by a mutex.
#pragma once

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "lemma/tokenizer/model.h"
#include "lemma/tokenizer/vocab.h"

namespace lemma::tok {

struct BpeOptions {
  bool byte_fallback = false;          // unknown chars -> "<0xXX>" tokens
  std::optional<int32_t> unk_id;       // otherwise unknown chars -> unk (or dropped if none)
  bool fuse_unk = false;               // consecutive unknowns become one unk
  bool ignore_merges = false;          // a word that is itself a token is emitted directly
  std::string continuing_subword_prefix;
  std::string end_of_word_suffix;
};

class BpeModel final : public Model {
 public:
  // `merges` are (left, right) token texts in rank order; pairs whose parts or result are not in
  // the vocabulary are skipped (llama.cpp does the same).
  BpeModel(const Vocab& vocab, const std::vector<std::pair<std::string, std::string>>& merges,
           BpeOptions options);
  void encode_word(std::string_view word, std::vector<int32_t>& out) const override;
  std::string describe() const override;
  bool may_drop_text(bool byte_level_input) const override;
  size_t num_merges() const { return merges_.size(); }

 private:
  struct Merge {
    int32_t rank;
    int32_t result;
  };
  void encode_uncached(std::string_view word, std::vector<int32_t>& out) const;

  const Vocab& vocab_;
  BpeOptions options_;
  std::unordered_map<uint64_t, Merge> merges_;  // (left id << 32 | right id) -> merge

  mutable std::mutex cache_mutex_;
  struct TextHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  mutable std::unordered_map<std::string, std::vector<int32_t>, TextHash, std::equal_to<>> cache_;
};

}  // namespace lemma::tok
