#define PCRE2_CODE_UNIT_WIDTH 8
#include "lemma/tokenizer/regex.h"

#include <pcre2.h>

#include "lemma/base/error.h"
#include "lemma/tokenizer/utf8.h"

namespace lemma::tok {

Regex::Regex(const std::string& pattern, bool literal) : pattern_(pattern) {
  // UCP makes \s, \d, \w and POSIX classes Unicode-aware like Oniguruma/fancy-regex in HF.
  // DOLLAR_ENDONLY: `$` means end of the piece, never "before a final newline".
  // PCRE2_LITERAL accepts only a few other options.
  const uint32_t options = literal ? (PCRE2_UTF | PCRE2_LITERAL)
                                   : (PCRE2_UTF | PCRE2_UCP | PCRE2_DOLLAR_ENDONLY);
  int error = 0;
  PCRE2_SIZE offset = 0;
  code_ = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(), options,
                        &error, &offset, nullptr);
  if (!code_) {
    PCRE2_UCHAR msg[256];
    pcre2_get_error_message(error, msg, sizeof(msg));
    fail<FormatError>("tokenizer regex '{}' does not compile at offset {}: {}", pattern, offset,
                      reinterpret_cast<const char*>(msg));
  }
  pcre2_jit_compile(static_cast<pcre2_code*>(code_), PCRE2_JIT_COMPLETE);  // best effort
}

Regex::~Regex() {
  if (code_) pcre2_code_free(static_cast<pcre2_code*>(code_));
}

Regex::Regex(Regex&& o) noexcept : pattern_(std::move(o.pattern_)), code_(o.code_) {
  o.code_ = nullptr;
}

Regex& Regex::operator=(Regex&& o) noexcept {
  if (this != &o) {
    if (code_) pcre2_code_free(static_cast<pcre2_code*>(code_));
    pattern_ = std::move(o.pattern_);
    code_ = o.code_;
    o.code_ = nullptr;
  }
  return *this;
}

std::vector<std::pair<size_t, size_t>> Regex::find_all(std::string_view text) const {
  std::vector<std::pair<size_t, size_t>> out;
  auto* code = static_cast<pcre2_code*>(code_);
  pcre2_match_data* md = pcre2_match_data_create_from_pattern(code, nullptr);
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  size_t start = 0;
  while (start <= text.size()) {
    int rc = pcre2_match(code, subject, text.size(), start, PCRE2_NO_UTF_CHECK, md, nullptr);
    if (rc == PCRE2_ERROR_JIT_STACKLIMIT) {
      // The JIT's fixed stack is small; the interpreter keeps its backtracking on the heap.
      rc = pcre2_match(code, subject, text.size(), start, PCRE2_NO_UTF_CHECK | PCRE2_NO_JIT, md, nullptr);
    }
    if (rc == PCRE2_ERROR_NOMATCH) break;
    if (rc < 0) {
      PCRE2_UCHAR msg[256];
      pcre2_get_error_message(rc, msg, sizeof(msg));
      pcre2_match_data_free(md);
      // A silent partial split would change token ids, so a resource limit is an error.
      fail<InvalidArgument>("tokenizer regex '{}' failed on a {}-byte piece: {}", pattern_, text.size(),
                            reinterpret_cast<const char*>(msg));
    }
    const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md);
    const size_t b = ov[0], e = ov[1];
    out.emplace_back(b, e);
    if (e > b) {
      start = e;
    } else {
      if (b >= text.size()) break;
      start = b + utf8_len(static_cast<unsigned char>(text[b]));
    }
  }
  pcre2_match_data_free(md);
  return out;
}

}  // namespace lemma::tok
