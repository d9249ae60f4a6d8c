// The subword model stage: turns one pre-tokenized word into token ids.
// Implementations are immutable after construction (caches are internally locked), so
// encode_word() is thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace lemma::tok {

class Model {
 public:
  virtual ~Model() = default;
  virtual void encode_word(std::string_view word, std::vector<int32_t>& out) const = 0;
  virtual std::string describe() const = 0;
  // Whether some input may produce no token or collapse into one token (unknown characters
  // dropped, or fused into one unk). `byte_level_input`: words are GPT-2 byte-level text.
  virtual bool may_drop_text(bool byte_level_input) const {
    (void)byte_level_input;
    return true;
  }
};

}  // namespace lemma::tok
