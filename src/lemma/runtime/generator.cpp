#include "lemma/runtime/generator.h"

#include <algorithm>
#include <chrono>

#include "lemma/base/error.h"
#include "lemma/base/trace.h"
#include "lemma/model/kv_cache.h"

namespace lemma {

namespace {
constexpr int64_t kBlockSize = 16;

double elapsed_ms(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - since).count();
}
}  // namespace

const char* to_string(FinishReason reason) {
  switch (reason) {
    case FinishReason::kLength: return "length";
    case FinishReason::kStop: return "stop";
    case FinishReason::kCallback: return "cancelled";
  }
  return "?";
}

double GenerationTimings::prefill_tokens_per_second() const {
  return prefill_ms > 0 ? static_cast<double>(prompt_tokens) * 1e3 / prefill_ms : 0.0;
}

double GenerationTimings::decode_tokens_per_second() const {
  return decode_ms > 0 && generated_tokens > 1 ? static_cast<double>(generated_tokens - 1) * 1e3 / decode_ms : 0.0;
}

GenerationResult generate(const Model& model, std::span<const int32_t> prompt, const GenerationOptions& options,
                          const TokenCallback& on_token) {
  const auto& config = model.config();
  if (prompt.empty()) fail<InvalidArgument>("the prompt is empty: give at least one token");
  if (options.max_tokens < 0) fail<InvalidArgument>("max_tokens must be >= 0, got {}", options.max_tokens);
  for (int32_t id : prompt)
    if (id < 0 || id >= config.vocab_size)
      fail<InvalidArgument>("prompt token id {} is outside the vocabulary [0, {})", id, config.vocab_size);
  options.sampling.validate(config.vocab_size);
  const int64_t total = static_cast<int64_t>(prompt.size()) + options.max_tokens;
  if (config.max_position_embeddings > 0 && total > config.max_position_embeddings)
    fail<InvalidArgument>("prompt ({} tokens) + max_tokens ({}) exceeds the model's context length {}",
                          prompt.size(), options.max_tokens, config.max_position_embeddings);

  GenerationResult result;
  result.timings.prompt_tokens = static_cast<int64_t>(prompt.size());
  if (options.max_tokens == 0) return result;

  const int64_t num_blocks = (total + kBlockSize - 1) / kBlockSize;
  KvCache cache = KvCache::for_model(config, num_blocks, kBlockSize, options.kv_dtype);
  const std::vector<int32_t> block_table = contiguous_block_table(total, kBlockSize);
  ForwardWorkspace workspace(std::max(1, options.num_threads));
  std::vector<float> logits(static_cast<size_t>(config.vocab_size));
  Sampler sampler(options.sampling, options.default_seed);
  result.ids.reserve(static_cast<size_t>(options.max_tokens));

  std::vector<int32_t> next_input;
  int64_t num_cached = 0;
  auto start = std::chrono::steady_clock::now();
  for (int64_t step = 0; step < options.max_tokens; ++step) {
    trace::Scope t_step(step == 0 ? "prefill_step" : "decode_step", "step", "step", step);
    ForwardBatch batch;
    SequenceInput seq;
    seq.token_ids = step == 0 ? prompt : std::span<const int32_t>(next_input);
    seq.num_cached = num_cached;
    seq.block_table = block_table;
    seq.logits = LogitsRequest::kLast;
    batch.sequences.push_back(seq);
    model.forward(batch, cache, workspace, logits);
    num_cached += seq.num_tokens();

    trace::Scope t_sample("sampling");
    const SampleResult sampled = sampler.sample(logits, prompt, result.ids);
    t_sample.end();
    if (sampled.token == kNoToken) fail<Error>("no finite logit at step {}: the model produced NaN/-inf everywhere", step);
    result.ids.push_back(sampled.token);
    if (step == 0) {
      result.timings.prefill_ms = elapsed_ms(start);
      start = std::chrono::steady_clock::now();
    }
    const bool is_eos = !options.ignore_eos && config.eos_token_id && sampled.token == *config.eos_token_id;
    const bool is_stop = std::find(options.stop_token_ids.begin(), options.stop_token_ids.end(), sampled.token) !=
                         options.stop_token_ids.end();
    trace::Scope t_output("on_token", "output");  // the caller's detokenise-and-print
    const bool keep_going = !on_token || on_token(sampled.token);
    t_output.end();
    if (is_eos || is_stop) {
      result.finish_reason = FinishReason::kStop;
      break;
    }
    if (!keep_going) {
      result.finish_reason = FinishReason::kCallback;
      break;
    }
    next_input.assign(1, sampled.token);
  }
  if (result.ids.size() > 1) result.timings.decode_ms = elapsed_ms(start);
  result.timings.generated_tokens = static_cast<int64_t>(result.ids.size());
  return result;
}

}  // namespace lemma
