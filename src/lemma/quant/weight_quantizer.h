// Quantizes a checkpoint's matrices into lemma's weight-only int8/int4 safetensors layout
// (quantized_safetensors.h). Matrices named "*weight" whose row length fits the format are
// quantized, except (as GPTQ/AWQ checkpoints do) the token embedding and the output matrix
// (token_embd/output, embed_tokens/lm_head) unless `include_embeddings` is set; everything else
// (1-D tensors, rows that do not fill a group, names matching a keep pattern) is stored as it was,
// widened to f32 when its dtype has no safetensors name (GGUF blocks).
// Not thread-safe (the result owns the bytes its views point into).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "lemma/io/safetensors.h"
#include "lemma/quant/gptq.h"
#include "lemma/quant/weight_format.h"

namespace lemma::quant {

struct NamedTensor {
  std::string name;
  TensorView view;
};

struct WeightQuantizeOptions {
  WeightQuantSpec spec;
  std::vector<std::string> keep_patterns;  // ECMAScript regexes searched in the name
  bool include_embeddings = false;         // also quantize the token embedding and output matrix
};

// The token embedding or the output (LM head) matrix, by GGUF or HF name.
bool is_embedding_or_output(std::string_view name);

struct WeightTensorPlan {
  std::string name;
  bool quantized = false;
  std::string reason;
  uint64_t bytes_before = 0, bytes_after = 0;
};

// The output: safetensors entries whose views point into `quantized` and `widened`.
struct QuantizedCheckpoint {
  std::vector<QuantizedWeight> quantized;
  std::vector<std::vector<float>> widened;
  std::vector<SafetensorsTensor> tensors;
  std::map<std::string, std::string> metadata;
  std::vector<WeightTensorPlan> plans;

  QuantizedCheckpoint() = default;
  QuantizedCheckpoint(QuantizedCheckpoint&&) = default;
  QuantizedCheckpoint& operator=(QuantizedCheckpoint&&) = default;
};

using WeightQuantizeProgress = std::function<void(size_t, size_t, const WeightTensorPlan&)>;

// Matrices whose input Hessian `calibration` gives are quantized by GPTQ (gptq_quantize_weight;
// not for W8A8), the others round to nearest (quantize_weight).
QuantizedCheckpoint quantize_weights(const std::vector<NamedTensor>& tensors, const WeightQuantizeOptions& options,
                                     const WeightQuantizeProgress& progress = {},
                                     const GptqCalibration& calibration = {});

}  // namespace lemma::quant
