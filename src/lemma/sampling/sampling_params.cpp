#include "lemma/sampling/sampling_params.h"

#include <cmath>

#include "lemma/base/error.h"

namespace lemma {

void SamplingParams::validate(int64_t vocab_size) const {
  auto check = [](bool ok, const char* field, double value, const char* range) {
    if (!ok) fail<InvalidArgument>("sampling: {}={} is outside {}", field, value, range);
  };
  check(std::isfinite(temperature) && temperature >= 0.0f, "temperature", temperature, "[0, inf)");
  check(std::isfinite(top_p) && top_p > 0.0f && top_p <= 1.0f, "top_p", top_p, "(0, 1]");
  check(std::isfinite(min_p) && min_p >= 0.0f && min_p <= 1.0f, "min_p", min_p, "[0, 1]");
  check(std::isfinite(repetition_penalty) && repetition_penalty > 0.0f, "repetition_penalty",
        repetition_penalty, "(0, inf)");
  check(std::isfinite(presence_penalty) && std::fabs(presence_penalty) <= 2.0f, "presence_penalty",
        presence_penalty, "[-2, 2]");
  check(std::isfinite(frequency_penalty) && std::fabs(frequency_penalty) <= 2.0f, "frequency_penalty",
        frequency_penalty, "[-2, 2]");
  check(top_logprobs >= 0, "top_logprobs", top_logprobs, "[0, vocab]");
  if (top_logprobs > 0 && !logprobs) fail<InvalidArgument>("sampling: top_logprobs={} needs logprobs", top_logprobs);
  if (beam_search) {
    check(beam_search->width >= 1 && beam_search->width <= BeamSearchParams::kMaxWidth, "beam width",
          beam_search->width, "[1, 256]");
    check(std::isfinite(beam_search->length_penalty), "length_penalty", beam_search->length_penalty, "finite values");
  }
  for (const auto& [token, bias] : logit_bias) {
    if (!std::isfinite(bias)) fail<InvalidArgument>("sampling: logit_bias[{}]={} is not finite", token, bias);
    if (token < 0 || (vocab_size > 0 && token >= vocab_size)) {
      fail<InvalidArgument>("sampling: logit_bias token {} is outside [0, {})", token, vocab_size);
    }
  }
}

}  // namespace lemma
