// Model: a loaded Llama-family decoder (config + weights over the mapped file) and its forward:
// embedding, per layer RMSNorm -> attention over the block-table KV cache -> residual -> RMSNorm
// -> SwiGLU MLP -> residual, then final RMSNorm and the LM head. Prefill and decode are the same
// call (a sequence with num_cached = 0 and many tokens, or one new token after a prefix).
// Move-only; immutable after load, so concurrent forward() calls are safe when each has its own
// KvCache blocks and ForwardWorkspace, except under tensor parallelism (RuntimeOptions::
// tensor_parallel): then a Model is one rank's shard, config() its share (heads, KV heads,
// intermediate columns; the vocabulary whole), and its forward() runs collectives, so one forward
// at a time per rank, in the same order on every rank.
#pragma once

#include <filesystem>
#include <memory>
#include <span>

#include "lemma/base/mapped_file.h"
#include "lemma/model/forward_batch.h"
#include "lemma/model/forward_workspace.h"
#include "lemma/model/kv_cache.h"
#include "lemma/model/model_config.h"
#include "lemma/model/model_weights.h"
#include "lemma/model/runtime_options.h"
#include "lemma/model/tensor_parallel.h"

namespace lemma {

class Model {
 public:
  // A .gguf file, or a Hugging Face directory (config.json + model.safetensors or a sharded
  // index), or a .safetensors file next to its config.json. Throws FormatError/Unsupported/IoError.
  static Model open(const std::filesystem::path& path, LoadMode mode = LoadMode::kLazyMmap,
                    const RuntimeOptions& runtime = {});
  // From tensors already in memory (tests, converters). `owner` keeps their bytes alive.
  // `owns_sources`: only `owner` references the tensors' bytes and nothing else reads them (Model::open
  // of a GGUF file): matrices re-laid at load hand their source pages back (interleaved_weights.h).
  // `runtime` picks the kernels and the weights' layout (Unsupported for an ISA this machine lacks).
  static Model from_tensors(ModelConfig config, WeightFormat format, const TensorLookup& lookup,
                            std::shared_ptr<const void> owner, bool owns_sources = false,
                            const RuntimeOptions& runtime = {});

  Model(Model&&) noexcept = default;
  Model& operator=(Model&&) noexcept = default;
  Model(const Model&) = delete;
  Model& operator=(const Model&) = delete;

  // A model made of this one's first `num_layers` layers, then its final norm and LM head, sharing
  // every weight (layer-skip self-speculation drafts with it). Lives no longer than this model's
  // files need to, which the shared owners see to. Throws InvalidArgument unless 1 <= num_layers <=
  // config().num_layers.
  Model first_layers(int64_t num_layers) const;

  const ModelConfig& config() const { return config_; }
  const ModelWeights& weights() const { return weights_; }
  WeightFormat format() const { return format_; }
  const RuntimeOptions& runtime() const { return runtime_; }
  // This rank's tensor-parallel shard (slices, bytes held); null on a single rank.
  const TensorParallelShard* tensor_parallel() const { return tp_.get(); }

  // Runs the batch: writes the new tokens' keys/values into `cache` (at their block-table slots)
  // and their logits into `logits` ([batch.num_logit_rows(), vocab] f32, sequences in order).
  // Throws InvalidArgument (before touching the cache) for token ids out of range, block tables
  // that do not cover the context or point outside the cache, or a too small `logits`.
  void forward(const ForwardBatch& batch, KvCache& cache, ForwardWorkspace& workspace, std::span<float> logits) const;

  // Tensor parallelism driven by rank 0 (RuntimeOptions::tensor_parallel_leader), on ranks 1..: runs
  // every forward rank 0 runs, on caches of the same blocks (this rank's KV heads), with
  // `num_threads` threads, until rank 0 calls stop_followers(). Defined in tensor_parallel_steps.cpp.
  void follow(int num_threads = 1) const;
  // On rank 0: ends the other ranks' follow(). Call once, also when the leader's work failed.
  void stop_followers() const;

 private:
  Model() = default;
  void validate(const ForwardBatch& batch, const KvCache& cache, std::span<float> logits) const;
  void validate_streaming(const SequenceInput& seq, size_t index) const;  // attention sinks (G10)

  ModelConfig config_;
  WeightFormat format_ = WeightFormat::kGguf;
  RuntimeOptions runtime_;
  ModelWeights weights_;
  RopeFrequencies rope_;  // for every forward unless the scaling depends on the length (dynamic NTK)
  std::shared_ptr<const void> owner_;
  std::shared_ptr<const void> interleaved_;  // 16-row interleaved (*x16) copies of its matrices, every format interleaved_weights.h re-lays
  std::shared_ptr<const TensorParallelShard> tp_;  // null: the whole model on this rank
  uint64_t id_ = 0;  // unique per loaded model: keys the workspaces' captured decode plans
};

}  // namespace lemma
