#include "lemma/tokenizer/spm_model.h"

#include <queue>
#include <string>

#include "lemma/tokenizer/utf8.h"

namespace lemma::tok {
namespace {

struct Symbol {
  size_t begin, len;   // byte range in the text; len 0 once merged away
  int32_t prev, next;
};

struct Candidate {
  float score;
  int32_t left, right;
  size_t len;  // expected combined length, to detect stale entries
  bool operator<(const Candidate& o) const {  // max-heap: higher score, then lower left
    return score != o.score ? score < o.score : left > o.left;
  }
};

}  // namespace

SpmModel::SpmModel(const Vocab& vocab, std::vector<float> scores, std::optional<int32_t> unk_id)
    : vocab_(vocab), scores_(std::move(scores)), unk_id_(unk_id) {
  scores_.resize(static_cast<size_t>(vocab.size()), 0.0f);
}

std::optional<int32_t> SpmModel::mergeable(std::string_view text) const {
  auto id = vocab_.find(text);
  if (!id || *id >= static_cast<int32_t>(scores_.size())) return std::nullopt;
  const TokenType t = vocab_.type(*id);
  if (t == TokenType::kControl || t == TokenType::kUnknown || t == TokenType::kByte) return std::nullopt;
  return id;
}

void SpmModel::encode_word(std::string_view text, std::vector<int32_t>& out) const {
  std::vector<Symbol> symbols;
  for (size_t pos = 0; pos < text.size();) {
    const size_t len = std::min(utf8_len(static_cast<unsigned char>(text[pos])), text.size() - pos);
    const auto n = static_cast<int32_t>(symbols.size());
    symbols.push_back({pos, len, n - 1, -1});
    if (n > 0) symbols[static_cast<size_t>(n - 1)].next = n;
    pos += len;
  }
  std::priority_queue<Candidate> queue;
  auto consider = [&](int32_t left, int32_t right) {
    if (left < 0 || right < 0) return;
    const auto& l = symbols[static_cast<size_t>(left)];
    const auto& r = symbols[static_cast<size_t>(right)];
    const size_t len = l.len + r.len;
    if (auto id = mergeable(text.substr(l.begin, len))) {
      queue.push({scores_[static_cast<size_t>(*id)], left, right, len});
    }
  };
  for (int32_t i = 1; i < static_cast<int32_t>(symbols.size()); ++i) consider(i - 1, i);

  while (!queue.empty()) {
    const Candidate c = queue.top();
    queue.pop();
    auto& l = symbols[static_cast<size_t>(c.left)];
    auto& r = symbols[static_cast<size_t>(c.right)];
    if (l.len == 0 || r.len == 0 || l.next != c.right || l.len + r.len != c.len) continue;
    l.len += r.len;
    r.len = 0;
    l.next = r.next;
    if (r.next >= 0) symbols[static_cast<size_t>(r.next)].prev = c.left;
    consider(l.prev, c.left);
    consider(c.left, l.next);
  }

  for (int32_t i = symbols.empty() ? -1 : 0; i >= 0; i = symbols[static_cast<size_t>(i)].next) {
    const auto& s = symbols[static_cast<size_t>(i)];
    const std::string_view piece = text.substr(s.begin, s.len);
    if (auto id = vocab_.find(piece)) {
      out.push_back(*id);
      continue;
    }
    bool all_bytes = true;
    for (unsigned char b : piece) all_bytes = all_bytes && vocab_.byte_token(b).has_value();
    if (all_bytes) {
      for (unsigned char b : piece) out.push_back(*vocab_.byte_token(b));
    } else if (unk_id_) {
      out.push_back(*unk_id_);
    }
  }
}

}  // namespace lemma::tok
