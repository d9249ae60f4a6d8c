#include "lemma/spec/speculative_options.h"

#include "lemma/spec/mtp_proposer.h"

#include "lemma/base/error.h"

namespace lemma::spec {

namespace {

// Layer-skip self-speculation: the draft is a view of the target's first layers, owned here so it
// lives as long as the proposer that runs it.
class LayerSkipProposer final : public DraftSource {
 public:
  LayerSkipProposer(Model draft, int64_t vocab, const DraftModelConfig& config)
      : draft_(std::move(draft)), proposer_(draft_, vocab, config) {}
  void propose(std::span<const DraftQuery> queries, std::vector<Drafts>& out) override { proposer_.propose(queries, out); }
  void forget(uint64_t id) override { proposer_.forget(id); }

 private:
  Model draft_;
  DraftModelProposer proposer_;
};

// The forward takes no token tree on sliding-window layers (model/forward_batch.h): refused here, not
// with every request's first verification.
void require_tree_attention(const Model& target, std::string_view what) {
  for (int64_t window : target.config().sliding_window)
    if (window > 0) fail<InvalidArgument>("{}: token trees need a model without sliding-window layers", what);
}

}  // namespace

SpeculativeMethod parse_speculative_method(std::string_view name) {
  if (name == "none") return SpeculativeMethod::kNone;
  if (name == "ngram") return SpeculativeMethod::kNgram;
  if (name == "draft") return SpeculativeMethod::kDraftModel;
  if (name == "layer-skip") return SpeculativeMethod::kLayerSkip;
  if (name == "mtp") return SpeculativeMethod::kMtp;
  if (name == "ngram-tree") return SpeculativeMethod::kNgramTree;
  fail<InvalidArgument>("speculative method '{}' is not one of none, ngram, ngram-tree, draft, layer-skip, mtp", name);
}

std::string_view speculative_method_name(SpeculativeMethod method) {
  switch (method) {
    case SpeculativeMethod::kNone: return "none";
    case SpeculativeMethod::kNgram: return "ngram";
    case SpeculativeMethod::kDraftModel: return "draft";
    case SpeculativeMethod::kLayerSkip: return "layer-skip";
    case SpeculativeMethod::kMtp: return "mtp";
    case SpeculativeMethod::kNgramTree: return "ngram-tree";
  }
  return "none";
}

std::unique_ptr<DraftSource> make_draft_source(const SpeculativeOptions& options, const Model& target,
                                               DraftModelConfig draft) {
  if (options.method == SpeculativeMethod::kNone) return nullptr;
  if (options.num_tokens < 1 || options.num_tokens > 16)
    fail<InvalidArgument>("speculative decoding: {} speculative tokens; use 1 to 16", options.num_tokens);
  if (options.draft_kv_blocks < 0) fail<InvalidArgument>("speculative decoding: negative draft KV blocks");
  if (options.draft_kv_blocks > 0) draft.num_blocks = options.draft_kv_blocks;
  const int64_t vocab = target.config().vocab_size;
  if (options.tree_width < 1 || options.tree_width > 16)
    fail<InvalidArgument>("speculative decoding: tree width {}; use 1 to 16", options.tree_width);
  draft.tree_width = options.tree_width;
  if (options.tree_width > 1 &&
      (options.method == SpeculativeMethod::kDraftModel || options.method == SpeculativeMethod::kLayerSkip))
    require_tree_attention(target, "draft-model tree speculation");
  switch (options.method) {
    case SpeculativeMethod::kNgram:
    case SpeculativeMethod::kNgramTree:
      if (options.ngram.min_n < 1 || options.ngram.max_n < options.ngram.min_n)
        fail<InvalidArgument>("n-gram speculation: min_n ({}) must be >= 1 and <= max_n ({})", options.ngram.min_n,
                              options.ngram.max_n);
      if (options.method == SpeculativeMethod::kNgram) return std::make_unique<NgramProposer>(options.ngram);
      if (options.tree_branches < 1)
        fail<InvalidArgument>("n-gram tree speculation: {} branches; use at least 1", options.tree_branches);
      require_tree_attention(target, "n-gram tree speculation");
      return std::make_unique<NgramTreeProposer>(NgramTreeConfig{options.ngram, options.tree_branches});
    case SpeculativeMethod::kDraftModel:
      if (options.draft_model == nullptr) fail<InvalidArgument>("draft-model speculation needs a draft model");
      return std::make_unique<DraftModelProposer>(*options.draft_model, vocab, draft);
    case SpeculativeMethod::kLayerSkip: {
      const int64_t total = target.config().num_layers;
      const int64_t layers = options.layers > 0 ? options.layers : total / 2;
      if (layers < 1 || layers >= total)
        fail<InvalidArgument>("layer-skip speculation: {} layers; the model has {}, so use 1 to {}", layers, total,
                              total - 1);
      return std::make_unique<LayerSkipProposer>(target.first_layers(layers), vocab, draft);
    }
    case SpeculativeMethod::kMtp:
      if (options.mtp_module == nullptr) fail<InvalidArgument>("mtp speculation needs the model's MTP module");
      if (options.tree_width > 1) fail<InvalidArgument>("mtp speculation proposes a chain of one draft; no tree width");
      return std::make_unique<MtpProposer>(target, options.mtp_module, draft);
    case SpeculativeMethod::kNone: break;
  }
  return nullptr;
}

}  // namespace lemma::spec
