#include "lemma/tokenizer/bpe_model.h"

#include <queue>

#include <fmt/format.h>

#include "lemma/tokenizer/byte_level.h"
#include "lemma/tokenizer/utf8.h"

namespace lemma::tok {
namespace {

constexpr size_t kCacheCapacity = 50000;   // words
constexpr size_t kCacheMaxWordBytes = 256;  // long words are rare and cheap to recompute

uint64_t pair_key(int32_t a, int32_t b) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b);
}

struct Symbol {
  int32_t id;
  int32_t prev, next;  // -1 at the ends
  bool alive;
};

struct Candidate {
  int32_t rank;
  int32_t left;  // symbol index
  int32_t left_id, right_id;
  bool operator>(const Candidate& o) const {
    return rank != o.rank ? rank > o.rank : left > o.left;
  }
};

}  // namespace

BpeModel::BpeModel(const Vocab& vocab,
                   const std::vector<std::pair<std::string, std::string>>& merges,
                   BpeOptions options)
    : vocab_(vocab), options_(std::move(options)) {
  merges_.reserve(merges.size() * 2);
  const size_t prefix_len = options_.continuing_subword_prefix.size();
  for (size_t rank = 0; rank < merges.size(); ++rank) {
    const auto& [a, b] = merges[rank];
    auto left = vocab.find(a);
    auto right = vocab.find(b);
    // With a continuing-subword prefix, the merged token drops the right part's prefix.
    std::string merged = a;
    if (prefix_len && b.compare(0, prefix_len, options_.continuing_subword_prefix) == 0) {
      merged += b.substr(prefix_len);
    } else {
      merged += b;
    }
    auto result = vocab.find(merged);
    if (!left || !right || !result) continue;
    merges_.emplace(pair_key(*left, *right), Merge{static_cast<int32_t>(rank), *result});
  }
}

std::string BpeModel::describe() const {
  return fmt::format("BPE({} merges{}{})", merges_.size(), options_.byte_fallback ? ", byte_fallback" : "",
                     options_.ignore_merges ? ", ignore_merges" : "");
}

bool BpeModel::may_drop_text(bool byte_level_input) const {
  // Every character gets a symbol when all its bytes have fallback tokens, when unknowns each
  // become an unk, or when the input is byte-level text and all 256 byte characters are tokens.
  bool all_bytes = options_.byte_fallback, all_byte_chars = byte_level_input && options_.continuing_subword_prefix.empty() &&
                                                            options_.end_of_word_suffix.empty();
  for (int b = 0; b < 256 && (all_bytes || all_byte_chars); ++b) {
    all_bytes = all_bytes && vocab_.byte_token(static_cast<unsigned char>(b)).has_value();
    const char byte = static_cast<char>(b);
    all_byte_chars = all_byte_chars && vocab_.find(byte_level_encode(std::string_view(&byte, 1))).has_value();
  }
  const bool unk_each = options_.unk_id.has_value() && !options_.fuse_unk;
  return !(all_bytes || all_byte_chars || unk_each);
}

void BpeModel::encode_word(std::string_view word, std::vector<int32_t>& out) const {
  if (word.empty()) return;
  const bool cacheable = word.size() <= kCacheMaxWordBytes;
  if (cacheable) {
    std::lock_guard lock(cache_mutex_);
    auto it = cache_.find(word);
    if (it != cache_.end()) {
      out.insert(out.end(), it->second.begin(), it->second.end());
      return;
    }
  }
  std::vector<int32_t> ids;
  encode_uncached(word, ids);
  out.insert(out.end(), ids.begin(), ids.end());
  if (cacheable) {
    std::lock_guard lock(cache_mutex_);
    if (cache_.size() >= kCacheCapacity) cache_.clear();
    cache_.emplace(std::string(word), std::move(ids));
  }
}

void BpeModel::encode_uncached(std::string_view word, std::vector<int32_t>& out) const {
  if (options_.ignore_merges && options_.end_of_word_suffix.empty()) {
    if (auto id = vocab_.find(word)) {
      out.push_back(*id);
      return;
    }
  }
  // Initial symbols: one per character (or per byte via fallback, or unk).
  std::vector<Symbol> symbols;
  symbols.reserve(word.size());
  bool last_was_unk = false;
  auto push = [&](int32_t id) {
    const auto n = static_cast<int32_t>(symbols.size());
    symbols.push_back({id, n - 1, -1, true});
    if (n > 0) symbols[static_cast<size_t>(n - 1)].next = n;
  };
  size_t pos = 0;
  while (pos < word.size()) {
    const size_t len = std::min(utf8_len(static_cast<unsigned char>(word[pos])), word.size() - pos);
    std::string_view piece = word.substr(pos, len);
    std::string decorated;  // only built for models with subword prefixes / word suffixes
    if ((pos > 0 && !options_.continuing_subword_prefix.empty()) ||
        (pos + len == word.size() && !options_.end_of_word_suffix.empty())) {
      decorated = (pos > 0 ? options_.continuing_subword_prefix : std::string()) + std::string(piece) +
                  (pos + len == word.size() ? options_.end_of_word_suffix : std::string());
      piece = decorated;
    }
    if (auto id = vocab_.find(piece)) {
      push(*id);
      last_was_unk = false;
    } else {
      bool done = false;
      if (options_.byte_fallback) {
        std::vector<int32_t> bytes;
        for (size_t i = 0; i < len; ++i) {
          auto b = vocab_.byte_token(static_cast<unsigned char>(word[pos + i]));
          if (!b) break;
          bytes.push_back(*b);
        }
        if (bytes.size() == len) {
          for (int32_t b : bytes) push(b);
          done = true;
          last_was_unk = false;
        }
      }
      if (!done && options_.unk_id) {
        if (!(options_.fuse_unk && last_was_unk)) push(*options_.unk_id);
        last_was_unk = true;
      }
    }
    pos += len;
  }

  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<>> queue;
  auto consider = [&](int32_t left) {
    if (left < 0) return;
    const int32_t right = symbols[static_cast<size_t>(left)].next;
    if (right < 0) return;
    const int32_t a = symbols[static_cast<size_t>(left)].id, b = symbols[static_cast<size_t>(right)].id;
    auto it = merges_.find(pair_key(a, b));
    if (it != merges_.end()) queue.push({it->second.rank, left, a, b});
  };
  for (int32_t i = 0; i + 1 < static_cast<int32_t>(symbols.size()); ++i) consider(i);

  while (!queue.empty()) {
    const Candidate c = queue.top();
    queue.pop();
    auto& left = symbols[static_cast<size_t>(c.left)];
    if (!left.alive || left.id != c.left_id || left.next < 0) continue;  // stale
    auto& right = symbols[static_cast<size_t>(left.next)];
    if (right.id != c.right_id) continue;
    left.id = merges_.at(pair_key(c.left_id, c.right_id)).result;
    right.alive = false;
    left.next = right.next;
    if (right.next >= 0) symbols[static_cast<size_t>(right.next)].prev = c.left;
    consider(left.prev);
    consider(c.left);
  }
  for (int32_t i = symbols.empty() ? -1 : 0; i >= 0; i = symbols[static_cast<size_t>(i)].next) {
    out.push_back(symbols[static_cast<size_t>(i)].id);
  }
}

}  // namespace lemma::tok
