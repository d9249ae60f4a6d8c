#include "lemma/engine/generate.h"

#include <algorithm>
#include <chrono>

#include "lemma/base/error.h"
#include "lemma/base/trace.h"
#include "lemma/engine/engine.h"

namespace lemma {

namespace {

constexpr int32_t kBlockSize = kGenerationBlockSize;
constexpr RequestId kRequestId = 0;  // the engine seeds an unseeded request with default_seed ^ id

double elapsed_ms(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - since).count();
}

// An engine for one sequence of `total` tokens: exactly enough KV blocks, no prefix cache, and a
// token budget that prefills the whole prompt in one step.
// Beam search of width W runs W sequences: W times the blocks, W slots, a step for W tokens.
EngineConfig single_request_config(int64_t total, const GenerationOptions& options) {
  const int32_t width = options.sampling.beam_search ? options.sampling.beam_search->width : 1;
  EngineConfig c;
  c.scheduler.max_num_seqs = width;
  c.scheduler.max_num_batched_tokens = std::max<int64_t>(total, width);
  c.scheduler.max_model_len = total;
  c.kv.block_size = kBlockSize;
  c.kv.num_device_blocks = width * static_cast<int32_t>((total + kBlockSize - 1) / kBlockSize);
  c.kv.watermark = 0.0;
  c.kv.enable_prefix_caching = false;
  c.kv_dtype = options.kv_dtype;
  c.num_threads = std::max(1, options.num_threads);
  c.default_seed = options.default_seed;
  c.speculative = options.speculative;
  if (options.streaming.enabled()) {  // attention sinks: prefill W tokens a step in a bounded cache
    const int64_t step = std::min(total, options.streaming.window);
    c.scheduler.max_num_batched_tokens = step;
    c.kv.num_device_blocks = static_cast<int32_t>(
        std::min<int64_t>(c.kv.num_device_blocks, options.streaming.max_live_blocks(kBlockSize, step)));
  }
  return c;
}

}  // namespace

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
  const int64_t total = static_cast<int64_t>(prompt.size()) + options.max_tokens;
  if (options.streaming.enabled() && options.speculative.enabled())
    fail<InvalidArgument>("speculative decoding is not supported with attention sinks (--attention-sinks / "
                          "--streaming-window)");
  if (!options.streaming.enabled() && config.max_position_embeddings > 0 && total > config.max_position_embeddings)
    fail<InvalidArgument>("prompt ({} tokens) + max_tokens ({}) exceeds the model's context length {}",
                          prompt.size(), options.max_tokens, config.max_position_embeddings);

  GenerationResult result;
  result.timings.prompt_tokens = static_cast<int64_t>(prompt.size());
  Engine engine(model, single_request_config(total, options));
  RequestOptions request;
  request.sampling = options.sampling;
  request.stop.max_tokens = options.max_tokens;
  request.stop.stop_token_ids = options.stop_token_ids;
  request.stop.eos_token_id = config.eos_token_id.value_or(-1);
  request.stop.ignore_eos = options.ignore_eos;
  request.streaming = options.streaming;
  request.lora = options.lora;
  const bool beam = options.sampling.beam_search.has_value();
  // Beam search returns every hypothesis it keeps (choice i: the i-th best).
  const int n = beam ? options.sampling.beam_search->width : 1;
  engine.add_request(kRequestId, {prompt.begin(), prompt.end()}, std::move(request), n);  // validates ids, sampling
  if (beam) result.beams.resize(static_cast<size_t>(n));
  if (options.max_tokens == 0) return result;
  result.ids.reserve(static_cast<size_t>(options.max_tokens));

  auto start = std::chrono::steady_clock::now();
  bool first_step = true;
  while (engine.has_unfinished_requests()) {
    StepReport report = engine.step();
    for (const EngineOutput& out : report.outputs) {
      if (beam && out.output.finished() && out.output.status != RequestStatus::kFinishedFailed) {
        GeneratedHypothesis& h = result.beams.at(static_cast<size_t>(out.choice));
        h.ids = out.output.new_token_ids;
        h.status = out.output.status;
        if (out.beam) h = {h.ids, h.status, out.beam->cumulative_logprob, out.beam->score};
      }
      if (out.choice != 0) continue;  // beam search: the best hypothesis is the result
      for (int32_t token : out.output.new_token_ids) {
        result.ids.push_back(token);
        trace::Scope t_output("on_token", "output");  // the caller's detokenise-and-print
        const bool keep_going = !on_token || on_token(token);
        t_output.end();
        if (!keep_going && !out.output.finished()) {
          engine.abort(kRequestId);
          result.status = RequestStatus::kFinishedCancelled;
        }
      }
      if (out.output.finished()) {
        if (out.output.status == RequestStatus::kFinishedFailed) fail<Error>("generation failed: {}", out.error);
        if (result.status != RequestStatus::kFinishedCancelled) result.status = out.output.status;
      }
    }
    if (first_step && (!result.ids.empty() || (beam && report.num_sequences > 0))) {
      result.timings.prefill_ms = elapsed_ms(start);
      start = std::chrono::steady_clock::now();
      first_step = false;
    }
  }
  if (result.ids.size() > 1) result.timings.decode_ms = elapsed_ms(start);
  // Fewer hypotheses than the width (every beam ended early): only those that finished.
  std::erase_if(result.beams, [](const GeneratedHypothesis& h) { return h.ids.empty(); });
  result.timings.generated_tokens = static_cast<int64_t>(result.ids.size());
  return result;
}

}  // namespace lemma
