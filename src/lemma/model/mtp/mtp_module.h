// DeepSeek-V3's multi-token-prediction module (G30), the first of config.num_nextn_predict_layers,
// stored in the HF checkpoint as model.layers.{L}.* (L = num_hidden_layers; GGUF conversions drop
// it). From the main model's final-normed hidden state h_i at position i and the token t_{i+1} it
// predicts t_{i+2}:
//   u_i = eh_proj([enorm(E[t_{i+1}]) ; hnorm(h_i)])        (the embedding half first, as vLLM and SGLang)
//   logits_i = shared_head.head(shared_head.norm(decoder layer L(u_0 .. u_i)))   (causal, RoPE positions 0..)
// The decoder layer with its MLA latent cache, its MoE and the shared head run as a one-layer Model
// (block()) fed the u rows as input embeddings (SequenceInput::input_embeddings). Move-only;
// immutable after open, so concurrent use with separate caches and workspaces is safe.
#pragma once

#include <filesystem>
#include <span>
#include <vector>

#include "lemma/model/model.h"

namespace lemma {

class MtpModule {
 public:
  // `hf_dir`: the main model's HF directory (config.json + safetensors). Throws Unsupported when the
  // model has no MTP module (config.num_nextn_predict_layers 0, or a GGUF file), FormatError for
  // missing tensors.
  static MtpModule open(const std::filesystem::path& hf_dir, LoadMode mode = LoadMode::kLazyMmap,
                        const RuntimeOptions& runtime = {});

  // The decoder layer + shared head as a one-layer model over the u rows (its config: the main
  // model's with num_layers 1). Its KV cache: KvCache::for_model(block().config(), ...).
  const Model& block() const { return block_; }
  int64_t hidden_size() const { return block_.config().hidden_size; }

  // u rows [n, hidden] of `hidden` ([n, hidden], the main model's final-normed hidden states at
  // positions i) and `next_tokens` ([n], t_{i+1}). Thread-safe.
  void inputs(std::span<const float> hidden, std::span<const int32_t> next_tokens, std::span<float> u) const;

 private:
  MtpModule(Model block, std::vector<float> enorm, std::vector<float> hnorm, TensorView eh_proj)
      : block_(std::move(block)), enorm_(std::move(enorm)), hnorm_(std::move(hnorm)), eh_proj_(eh_proj) {}

  Model block_;
  std::vector<float> enorm_, hnorm_;  // [hidden]
  TensorView eh_proj_;                // [hidden, 2 hidden]
};

// Teacher-forced MTP logits of a token sequence (what `lemma logits --mtp` prints and the golden
// mtp_logits hold): [tokens.size() - 1, vocab], row i predicts tokens[i + 2] from the main model's
// hidden state at i and tokens[i + 1]. Throws InvalidArgument for fewer than 2 tokens.
std::vector<float> mtp_sequence_logits(const Model& main, const MtpModule& mtp, std::span<const int32_t> tokens,
                                       int num_threads = 1);

// The main model's final-normed hidden states of every token of a sequence, [tokens.size(), hidden],
// from one forward over an empty f32 cache (its logits are computed too and dropped).
std::vector<float> final_hidden_states(const Model& main, std::span<const int32_t> tokens, int num_threads = 1);

}  // namespace lemma
