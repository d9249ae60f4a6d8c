#include "cli/speculative_option.h"

#include "lemma/base/error.h"

namespace lemma::cli {

void SpeculativeFlags::add_to(CLI::App* sub) {
  sub->add_option("--speculative-method", method, "Speculative decoding: none or ngram (prompt lookup)")
      ->capture_default_str();
  sub->add_option("--num-speculative-tokens", num_tokens, "Drafts per decode step with a speculative method")
      ->capture_default_str();
  sub->add_option("--ngram-prompt-lookup-min", ngram_min, "Shortest suffix an n-gram draft matches")->capture_default_str();
  sub->add_option("--ngram-prompt-lookup-max", ngram_max, "Longest suffix an n-gram draft matches")->capture_default_str();
}

SpeculativeConfig SpeculativeFlags::to_config() const {
  SpeculativeConfig c;
  if (method == "none") return c;
  if (method == "draft" || method == "layer-skip") {
    fail<InvalidArgument>("--speculative-method {} is not available yet; use ngram", method);
  }
  if (method != "ngram") fail<InvalidArgument>("--speculative-method {} is not one of none, ngram", method);
  if (num_tokens < 1 || num_tokens > 16) fail<InvalidArgument>("--num-speculative-tokens must be in [1, 16], got {}", num_tokens);
  if (ngram_min < 1 || ngram_max < ngram_min)
    fail<InvalidArgument>("--ngram-prompt-lookup-min ({}) must be >= 1 and <= --ngram-prompt-lookup-max ({})", ngram_min,
                          ngram_max);
  c.num_tokens = num_tokens;
  c.ngram = {ngram_min, ngram_max};
  return c;
}

}  // namespace lemma::cli
