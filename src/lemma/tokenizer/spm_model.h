// SentencePiece-style BPE driven by piece scores (GGUF tokenizer.ggml.model = "llama", which
// ships scores instead of merges): repeatedly joins the adjacent pair whose concatenation is a
// vocabulary piece with the highest score (leftmost on ties); characters that never form a
// piece fall back to "<0xXX>" byte tokens, else unk. Stateless per call; thread-safe.
#pragma once

#include <optional>
#include <vector>

#include "lemma/tokenizer/model.h"
#include "lemma/tokenizer/vocab.h"

namespace lemma::tok {

class SpmModel final : public Model {
 public:
  SpmModel(const Vocab& vocab, std::vector<float> scores, std::optional<int32_t> unk_id);
  void encode_word(std::string_view text, std::vector<int32_t>& out) const override;
  std::string describe() const override { return "SentencePiece-BPE(scores)"; }
  // Unknown characters become byte tokens, else one unk each, else nothing.
  bool may_drop_text(bool) const override { return !vocab_.has_byte_tokens() && !unk_id_; }

 private:
  // Pieces that merging may produce: normal, user-defined and unused ones (never control,
  // unknown or byte tokens, which SentencePiece keeps out of segmentation).
  std::optional<int32_t> mergeable(std::string_view text) const;

  const Vocab& vocab_;
  std::vector<float> scores_;
  std::optional<int32_t> unk_id_;
};

}  // namespace lemma::tok
