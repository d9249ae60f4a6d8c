// `lemma logits`: the logits of every position of a token sequence, as JSON; with attention sinks
// (G10) those of streaming it one token per step, as the sinks reference does; with --mtp those of
// DeepSeek-V3's multi-token-prediction module (G30), row i predicting token i+2.
#include <cstdio>
#include <optional>
#include <nlohmann/json.hpp>

#include "cli/runtime_flags.h"
#include "cli/arguments.h"
#include "cli/commands.h"
#include "lemma/base/error.h"
#include "lemma/model/lora/lora_adapter.h"
#include "lemma/model/model.h"
#include "lemma/model/mtp/mtp_module.h"
#include "lemma/model/sequence_logits.h"
#include "lemma/model/streaming_logits.h"
#include "cli/streaming_option.h"
#include "cli/tensor_parallel_option.h"

namespace lemma::cli {

namespace {
struct LogitsOptions {
  std::string model, ids, lora;
  StreamingFlags streaming;
  TensorParallelFlag tensor_parallel;
  bool mtp = false;
};
}  // namespace

void register_logits(CLI::App& app) {
  auto opts = std::make_shared<LogitsOptions>();
  auto* sub = app.add_subcommand("logits", "Print the logits of every position as a JSON array of arrays");
  sub->add_option("--model,-m", opts->model, "HF directory or .gguf file")->required();
  sub->add_option("--ids", opts->ids, "Token ids, e.g. \"1,2,3\"")->required();
  opts->streaming.add_to(sub);  // then: the logits of streaming the ids one token per step
  opts->tensor_parallel.add_to(sub);
  sub->add_flag("--mtp", opts->mtp,
                 "Print the MTP module's logits instead (DeepSeek-V3 HF directory): row i predicts token i+2 from "
                 "the hidden state at i and token i+1 (n-1 rows)");
  sub->add_option("--lora", opts->lora, "A PEFT LoRA adapter directory to apply (adapter_config.json + adapter_model.safetensors)");
  bind(sub, [opts] {
    const TensorParallelModel ranks(opts->model, LoadMode::kLazyMmap, runtime_options(), opts->tensor_parallel, 1);
    if (ranks.is_follower()) return 0;  // mpirun: rank 0 prints
    const Model& model = ranks.model();
    const auto ids = parse_id_list(opts->ids, "--ids");
    if (ids.empty()) fail<InvalidArgument>("--ids: give at least one token id");
    const int64_t vocab = model.config().vocab_size;
    const int64_t n = static_cast<int64_t>(ids.size());
    const StreamingWindow streaming = opts->streaming.to_window();
    std::optional<LoraAdapter> lora;
    if (!opts->lora.empty()) lora.emplace(load_lora_adapter(opts->lora, model.config()));
    if (lora && streaming.enabled()) fail<InvalidArgument>("logits: --lora together with --attention-sinks is not supported");
    if (opts->mtp && (lora || streaming.enabled()))
      fail<InvalidArgument>("logits: --mtp together with --lora or --attention-sinks is not supported");
    if (opts->mtp && n < 2) fail<InvalidArgument>("logits: --mtp needs at least 2 ids");
    std::optional<MtpModule> mtp;
    if (opts->mtp) mtp.emplace(MtpModule::open(opts->model, LoadMode::kLazyMmap, runtime_options()));
    const int64_t rows = mtp ? n - 1 : n;
    const std::vector<float> logits = mtp ? mtp_sequence_logits(model, *mtp, ids)
                                    : streaming.enabled() ? streaming_sequence_logits(model, ids, streaming).logits
                                                          : sequence_logits(model, ids, 1, KvDtype::kF32, lora ? &*lora : nullptr);
    // Print row by row: a long sequence's JSON can be large, so avoid building it whole.
    std::printf("[");
    for (int64_t row = 0; row < rows; ++row) {
      std::vector<float> r(logits.begin() + row * vocab, logits.begin() + (row + 1) * vocab);
      std::printf("%s%s", row ? "," : "", nlohmann::json(r).dump().c_str());
    }
    std::printf("]\n");
    return 0;
  });
}

}  // namespace lemma::cli
