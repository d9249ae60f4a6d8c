#include "cli/speculative_option.h"

#include "cli/runtime_flags.h"
#include "lemma/base/error.h"

namespace lemma::cli {

void SpeculativeFlags::add_to(CLI::App* sub) {
  sub->add_option("--speculative-method", method,
                  "Speculative decoding: none, ngram (prompt lookup), ngram-tree (prompt lookup, a tree of up to "
                  "three continuations verified in one forward), draft (--speculative-model), layer-skip "
                  "(the model's first --speculative-layers layers), mtp (DeepSeek-V3's multi-token-prediction module, HF "
                  "directory; one draft per step)")
      ->capture_default_str();
  sub->add_option("--num-speculative-tokens", num_tokens, "Drafts per decode step with a speculative method")
      ->capture_default_str();
  sub->add_option("--ngram-prompt-lookup-min", ngram_min, "Shortest suffix an n-gram draft matches")->capture_default_str();
  sub->add_option("--ngram-prompt-lookup-max", ngram_max, "Longest suffix an n-gram draft matches")->capture_default_str();
  sub->add_option("--speculative-model", model, "Draft model (same vocabulary) for --speculative-method draft");
  sub->add_option("--speculative-layers", layers,
                  "Layers of the model that draft for --speculative-method layer-skip (default: half)");
  sub->add_option("--speculative-tree-width", tree_width,
                  "Token trees: candidates per draft position for draft and layer-skip (W > 1: the draft's W "
                  "likeliest tokens, or W draws without replacement verified by recursive rejection sampling; "
                  "the first is extended while --num-speculative-tokens nodes last; default 1, a chain), "
                  "continuations for ngram-tree (default 3)");
  sub->add_option("--speculative-disable-by-batch-size", disable_by_batch_size,
                  "No drafts in a step where more requests run (0: no limit): verifying drafts stops paying "
                  "once the forward is bound by arithmetic")
      ->capture_default_str();
  sub->add_option("--speculative-kv-tokens", draft_kv_tokens,
                  "KV cache of the draft in tokens (default: as large as the model's)");
}

spec::SpeculativeOptions SpeculativeFlags::to_options(int64_t block_size) const {
  spec::SpeculativeOptions o;
  try {
    o.method = spec::parse_speculative_method(method);
  } catch (const InvalidArgument& e) {
    fail<InvalidArgument>("--speculative-method: {}", e.what());
  }
  if (o.method == spec::SpeculativeMethod::kNone) return o;
  if (num_tokens < 1 || num_tokens > 16) fail<InvalidArgument>("--num-speculative-tokens must be in [1, 16], got {}", num_tokens);
  if (ngram_min < 1 || ngram_max < ngram_min)
    fail<InvalidArgument>("--ngram-prompt-lookup-min ({}) must be >= 1 and <= --ngram-prompt-lookup-max ({})", ngram_min,
                          ngram_max);
  if (draft_kv_tokens < 0) fail<InvalidArgument>("--speculative-kv-tokens must be >= 0, got {}", draft_kv_tokens);
  if (layers < 0) fail<InvalidArgument>("--speculative-layers must be >= 0, got {}", layers);
  if (disable_by_batch_size < 0)
    fail<InvalidArgument>("--speculative-disable-by-batch-size must be >= 0, got {}", disable_by_batch_size);
  o.num_tokens = num_tokens;
  o.disable_by_batch_size = disable_by_batch_size;
  o.ngram = {ngram_min, ngram_max};
  o.layers = layers;  // 0: half of the model's (make_draft_source)
  if (tree_width < 0 || tree_width > 16) fail<InvalidArgument>("--speculative-tree-width must be in [1, 16], got {}", tree_width);
  if (tree_width > 1 && o.method == spec::SpeculativeMethod::kNgram)
    fail<InvalidArgument>("--speculative-tree-width is for ngram-tree, draft and layer-skip, not ngram");
  if (tree_width > 0) {
    if (o.method == spec::SpeculativeMethod::kNgramTree) o.tree_branches = tree_width;
    else o.tree_width = tree_width;
  }
  o.draft_kv_blocks = draft_kv_tokens > 0 ? (draft_kv_tokens + block_size - 1) / block_size : 0;
  if (o.method == spec::SpeculativeMethod::kDraftModel) {
    if (model.empty()) fail<InvalidArgument>("--speculative-method draft needs --speculative-model");
    try {
      o.draft_model = std::make_shared<const Model>(Model::open(model, LoadMode::kLazyMmap, runtime_options()));
    } catch (const std::exception& e) {
      fail<InvalidArgument>("--speculative-model {}: {}", model, e.what());
    }
  } else if (o.method == spec::SpeculativeMethod::kMtp) {
    if (target_model.empty()) fail<InvalidArgument>("--speculative-method mtp: no model path to read the MTP module from");
    try {
      o.mtp_module = std::make_shared<const MtpModule>(MtpModule::open(target_model, LoadMode::kLazyMmap, runtime_options()));
    } catch (const std::exception& e) {
      fail<InvalidArgument>("--speculative-method mtp: {}: {}", target_model, e.what());
    }
    o.num_tokens = 1;  // one MTP module: one draft per step
  } else if (!model.empty()) {
    fail<InvalidArgument>("--speculative-model is for --speculative-method draft, not {}", method);
  }
  return o;
}

}  // namespace lemma::cli
