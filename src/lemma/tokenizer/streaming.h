// StreamingDetokenizer: turns a stream of generated ids into text pieces that are always whole
// UTF-8 code points, whatever the tokens split (byte-level BPE pieces, "<0xE2>" byte tokens).
// It decodes a short window (one already-emitted context token + the pending ids) so per-token
// decoder rules, such as SentencePiece's dummy-prefix space, behave as in a full decode().
// One instance per output stream; not thread-safe. It holds its own (shared) Tokenizer handle.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "lemma/tokenizer/tokenizer.h"

namespace lemma {

class StreamingDetokenizer {
 public:
  explicit StreamingDetokenizer(const Tokenizer& tok, bool skip_special = true);
  // Makes the stream a continuation of `prompt`: its last visible token becomes the decoder's
  // context, so e.g. SentencePiece keeps the first generated token's leading space (as a
  // reference implementation's per-token pieces do). Call before the first push().
  void prime(std::span<const int32_t> prompt);
  // Newly completed text (possibly empty). An out-of-range id throws InvalidArgument and
  // leaves the stream unchanged.
  std::string push(int32_t id);
  // Whatever is left; bytes that never formed a code point come out as U+FFFD.
  std::string flush();

 private:
  Tokenizer tok_;
  bool skip_special_;
  std::vector<int32_t> context_;  // emitted ids kept for the decoder's context
  std::vector<int32_t> pending_;  // ids whose text is not fully emitted yet
  std::string context_text_;      // decode_raw(context_)
  size_t emitted_ = 0;            // bytes of decode_raw(context_ + pending_) past context_text_ already returned
};

}  // namespace lemma
