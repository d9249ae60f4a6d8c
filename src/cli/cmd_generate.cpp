// `lemma generate`: complete a prompt with the model, streaming text (or one JSON object).
#include <cstdio>
#include <nlohmann/json.hpp>

#include "cli/lora_option.h"
#include "cli/runtime_flags.h"
#include "cli/tensor_parallel_option.h"
#include "cli/arguments.h"
#include "cli/commands.h"
#include "cli/generation_options.h"
#include "cli/model_source.h"
#include "lemma/base/error.h"
#include "lemma/model/model.h"
#include "lemma/tokenizer/streaming.h"

namespace lemma::cli {

namespace {
struct GenerateOptions {
  std::string model;
  std::optional<std::string> prompt, prompt_ids;
  bool json = false;
  SamplingFlags sampling;
  BeamFlags beam;
  LoraFlags lora;
  TensorParallelFlag tensor_parallel;
};

std::string decode_continuation(const Tokenizer& tokenizer, std::span<const int32_t> prompt,
                                std::span<const int32_t> ids) {
  StreamingDetokenizer detokenizer(tokenizer, /*skip_special=*/true);
  detokenizer.prime(prompt);
  std::string text;
  for (int32_t id : ids) text += detokenizer.push(id);
  return text + detokenizer.flush();
}

nlohmann::ordered_json timings_json(const GenerationTimings& t, double load_ms) {
  nlohmann::ordered_json j;
  j["load_ms"] = load_ms;
  j["prompt_tokens"] = t.prompt_tokens;
  j["generated_tokens"] = t.generated_tokens;
  j["prefill_ms"] = t.prefill_ms;
  j["decode_ms"] = t.decode_ms;
  j["prefill_tokens_per_second"] = t.prefill_tokens_per_second();
  j["decode_tokens_per_second"] = t.decode_tokens_per_second();
  return j;
}
}  // namespace

void register_generate(CLI::App& app) {
  auto opts = std::make_shared<GenerateOptions>();
  auto* sub = app.add_subcommand("generate", "Generate a continuation of a prompt");
  sub->add_option("--model,-m", opts->model, "HF directory or .gguf file")->required();
  auto* text = sub->add_option("--prompt,-p", opts->prompt, "Prompt text (tokenised with the model's BOS rule)");
  auto* ids = sub->add_option("--prompt-ids", opts->prompt_ids, "Prompt token ids, e.g. \"1,2,3\"");
  text->excludes(ids);
  sub->add_flag("--json", opts->json,
                "Print one JSON object {prompt_ids, ids, text, finish_reason, timings} instead of streaming "
                "(with --beams also cumulative_logprob, score and beams: every hypothesis, best first)");
  opts->sampling.add_to(sub);
  opts->beam.add_to(sub);
  opts->lora.add_to(sub, /*select=*/true);
  opts->tensor_parallel.add_to(sub);
  bind(sub, [opts] {
    if (!opts->prompt && !opts->prompt_ids) fail<InvalidArgument>("generate: give --prompt or --prompt-ids");
    const LoadMode mode = parse_load_mode(opts->sampling.load);
    const auto load_start = std::chrono::steady_clock::now();
    // Under tensor parallelism the followers mirror rank 0's forwards only, not its KV block copies
    // (beam forks, speculative acceptance): those stay single-rank for now.
    if (opts->tensor_parallel.size > 1 && (opts->beam.beams || opts->sampling.speculative.method != "none"))
      fail<InvalidArgument>("generate: --tensor-parallel-size > 1 does not support --beams or speculative decoding yet");
    const TensorParallelModel ranks(opts->model, mode, runtime_options(), opts->tensor_parallel,
                                    resolve_threads(opts->sampling.threads));
    if (ranks.is_follower()) return 0;  // mpirun: rank 0 prints
    const Model& model = ranks.model();
    opts->sampling.speculative.target_model = opts->model;  // --speculative-method mtp reads its MTP module
    const auto source = open_model_source(opts->model);
    const Tokenizer tokenizer = load_tokenizer(source);
    const double load_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - load_start).count();

    const std::vector<int32_t> prompt = opts->prompt ? tokenizer.encode(*opts->prompt, true, false)
                                                     : parse_id_list(*opts->prompt_ids, "--prompt-ids");
    GenerationOptions options = opts->sampling.to_options(model.config().vocab_size, model.weights().attention_matrix().dtype);
    if (!options.ignore_eos) options.stop_token_ids = tokenizer.end_of_generation_ids();
    opts->beam.apply(options);
    options.lora = opts->lora.selected(model.config());

    StreamingDetokenizer detokenizer(tokenizer, /*skip_special=*/true);
    detokenizer.prime(prompt);
    std::string text;
    const auto on_token = [&](int32_t id) {
      const std::string piece = detokenizer.push(id);
      text += piece;
      if (!opts->json) {
        std::fwrite(piece.data(), 1, piece.size(), stdout);
        std::fflush(stdout);
      }
      return true;
    };
    if (!opts->json && opts->prompt) std::fwrite(opts->prompt->data(), 1, opts->prompt->size(), stdout);
    const GenerationResult result = generate(model, prompt, options, on_token);
    const std::string rest = detokenizer.flush();
    text += rest;

    if (opts->json) {
      nlohmann::ordered_json out;
      out["prompt_ids"] = prompt;
      out["ids"] = result.ids;
      out["text"] = text;
      out["finish_reason"] = std::string(finish_reason(result.status));
      if (!result.beams.empty()) {
        out["cumulative_logprob"] = result.beams.front().cumulative_logprob;
        out["score"] = result.beams.front().score;
        nlohmann::ordered_json beams = nlohmann::ordered_json::array();
        for (const GeneratedHypothesis& h : result.beams) {
          nlohmann::ordered_json b;
          b["ids"] = h.ids;
          b["text"] = decode_continuation(tokenizer, prompt, h.ids);
          b["cumulative_logprob"] = h.cumulative_logprob;
          b["score"] = h.score;
          b["finish_reason"] = std::string(finish_reason(h.status));
          beams.push_back(std::move(b));
        }
        out["beams"] = std::move(beams);
      }
      out["timings"] = timings_json(result.timings, load_ms);
      std::printf("%s\n", out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
    } else {
      std::fwrite(rest.data(), 1, rest.size(), stdout);
      std::printf("\n");
      const auto& t = result.timings;
      std::fprintf(stderr,
                   "\nload %.1f ms | prompt %lld tokens, %.1f ms (%.1f tok/s) | generated %lld tokens, %.1f ms "
                   "(%.1f tok/s) | finish: %s\n",
                   load_ms, static_cast<long long>(t.prompt_tokens), t.prefill_ms, t.prefill_tokens_per_second(),
                   static_cast<long long>(t.generated_tokens), t.decode_ms, t.decode_tokens_per_second(),
                   std::string(finish_reason(result.status)).c_str());
    }
    return 0;
  });
}

}  // namespace lemma::cli
