#include "cli/generation_options.h"

#include <cmath>
#include <random>
#include <thread>

#include "cli/kv_cache_option.h"
#include "lemma/base/error.h"

namespace lemma::cli {

int resolve_threads(int requested) {
  if (requested > 0) return requested;
  const unsigned cores = std::thread::hardware_concurrency();
  return cores > 0 ? static_cast<int>(cores) : 1;
}

void SamplingFlags::add_to(CLI::App* sub) {
  sub->add_option("--max-tokens,-n", max_tokens, "Tokens to generate at most")->capture_default_str();
  sub->add_option("--temperature,-t", temperature, "Sampling temperature; 0 = greedy")->capture_default_str();
  sub->add_option("--top-k", top_k, "Keep the k most likely tokens (0 = off)")->capture_default_str();
  sub->add_option("--top-p", top_p, "Nucleus sampling mass (1 = off)")->capture_default_str();
  sub->add_option("--min-p", min_p, "Drop tokens below min_p x the top probability (0 = off)")->capture_default_str();
  sub->add_option("--repeat-penalty", repetition_penalty, "Repetition penalty (1 = off)")->capture_default_str();
  sub->add_option("--seed", seed, "Random seed (default: random)");
  sub->add_flag("--ignore-eos", ignore_eos, "Keep generating after the end-of-sequence token");
  sub->add_option("--threads", threads, "Threads per forward (default: one per core)");
  sub->add_option("--load", load, "Weights: lazy (mmap), prefault (mmap + touch every page), copy")
      ->check(CLI::IsMember({"lazy", "prefault", "copy"}))
      ->capture_default_str();
  add_kv_cache_dtype_option(sub, kv_cache_dtype);
  speculative.add_to(sub);
  streaming.add_to(sub);
}

GenerationOptions SamplingFlags::to_options(int64_t vocab_size, DType weights) const {
  if (max_tokens < 0) fail<InvalidArgument>("--max-tokens must be >= 0, got {}", max_tokens);
  if (threads < 0) fail<InvalidArgument>("--threads must be >= 0, got {}", threads);
  GenerationOptions options;
  options.max_tokens = max_tokens;
  options.num_threads = resolve_threads(threads);
  options.ignore_eos = ignore_eos;
  options.kv_dtype = parse_kv_cache_dtype(kv_cache_dtype, weights);
  options.speculative = speculative.to_options(kGenerationBlockSize);
  options.streaming = streaming.to_window();
  options.sampling.temperature = temperature;
  options.sampling.top_k = top_k;
  options.sampling.top_p = top_p;
  options.sampling.min_p = min_p;
  options.sampling.repetition_penalty = repetition_penalty;
  options.sampling.seed = seed;
  options.default_seed = std::random_device{}();
  try {
    options.sampling.validate(vocab_size);
  } catch (const InvalidArgument& e) {
    fail<InvalidArgument>("sampling options: {}", e.what());
  }
  return options;
}

void BeamFlags::add_to(CLI::App* sub) {
  sub->add_option("--beams", beams,
                  "Beam search with N beams (deterministic: sampling flags do not apply); prints the best hypothesis, "
                  "--json all N");
  sub->add_option("--length-penalty", length_penalty,
                  "Beam search: a hypothesis scores sum(logprob) / len^X (X > 0 favours longer ones)")
      ->capture_default_str();
  sub->add_flag("--early-stopping", early_stopping,
                "Beam search: stop as soon as N hypotheses are finished (default: once no live beam, scored at its "
                "current length, beats the worst of them)");
}

void BeamFlags::apply(GenerationOptions& options) const {
  if (!beams) {
    if (length_penalty != 1.0f || early_stopping)
      fail<InvalidArgument>("--length-penalty and --early-stopping need --beams");
    return;
  }
  if (*beams < 1 || *beams > BeamSearchParams::kMaxWidth)
    fail<InvalidArgument>("--beams must be in [1, {}], got {}", BeamSearchParams::kMaxWidth, *beams);
  if (!std::isfinite(length_penalty)) fail<InvalidArgument>("--length-penalty must be finite, got {}", length_penalty);
  options.sampling.beam_search =
      BeamSearchParams{*beams, length_penalty, early_stopping ? EarlyStopping::kWhenFull : EarlyStopping::kHeuristic};
}

}  // namespace lemma::cli
