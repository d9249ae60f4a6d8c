// Pre-tokenizers: split a normalized segment into the "words" the model encodes one at a time
// (HF "pre_tokenizer"; for GGUF, a Split sequence built from tokenizer.ggml.pre's regexes).
// Immutable after construction; apply() is thread-safe.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace lemma::tok {

class PreTokenizer {
 public:
  virtual ~PreTokenizer() = default;
  // Rewrites `pieces` in place. `at_text_start`: the segment begins the whole input (HF's
  // Metaspace prepend_scheme "first" only prepends there).
  virtual void apply(std::vector<std::string>& pieces, bool at_text_start) const = 0;
  virtual std::string describe() const = 0;
  // Whether some input text may be left out of the pieces (a Split that removes matches).
  virtual bool may_drop_text() const { return true; }
  // Whether the pieces are GPT-2 byte-level text (every byte one of 256 printable characters).
  virtual bool emits_byte_level() const { return false; }
};

using PreTokenizerPtr = std::unique_ptr<const PreTokenizer>;

enum class SplitBehavior { kRemoved, kIsolated, kMergedWithPrevious, kMergedWithNext, kContiguous };

PreTokenizerPtr make_split(const std::string& pattern, bool literal, SplitBehavior behavior,
                           bool invert);
PreTokenizerPtr make_byte_level(bool add_prefix_space, bool use_regex);
PreTokenizerPtr make_sequence(std::vector<PreTokenizerPtr> steps);

// null / missing -> nullptr. Throws Unsupported for unknown types.
PreTokenizerPtr pre_tokenizer_from_json(const nlohmann::json& j);

// The regex GPT-2's ByteLevel pre-tokenizer uses when use_regex is true.
extern const char* const kGpt2SplitRegex;

}  // namespace lemma::tok
