// A compiled PCRE2 pattern (UTF + Unicode properties) used by pre-tokenizers and normalizers.
// Immutable after construction; find_all() is thread-safe (match data is per call).
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace lemma::tok {

class Regex {
 public:
  // `literal` compiles the pattern as a plain string (HF's {"String": ...} patterns).
  // Throws FormatError naming the pattern when PCRE2 rejects it.
  explicit Regex(const std::string& pattern, bool literal = false);
  ~Regex();
  Regex(Regex&&) noexcept;
  Regex& operator=(Regex&&) noexcept;
  Regex(const Regex&) = delete;
  Regex& operator=(const Regex&) = delete;

  // Non-overlapping matches, left to right, as [begin, end) byte offsets into `text`.
  // Empty matches are reported (a zero-width split point) and the scan advances by one char.
  std::vector<std::pair<size_t, size_t>> find_all(std::string_view text) const;
  const std::string& pattern() const { return pattern_; }

 private:
  std::string pattern_;
  void* code_ = nullptr;  // pcre2_code_8*
};

}  // namespace lemma::tok
