// SmoothQuant calibration for `lemma quantize --type w8a8 --calibrate FILE`: runs the model on the
// text and records, per layer, max |x_j| of each RMSNorm output channel (the input of q/k/v and of
// gate/up), then folds smoothing factors into the norms and matrices (quant/smooth_quant.h).
// The norm outputs are read without hooks in the forward: a copy of the model cut after layer l,
// with layer l's o_proj (attention input) and down_proj zeroed, that norm as its final norm and an
// identity head, returns them as the first `hidden` logits. Not thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "cli/model_source.h"
#include "lemma/quant/weight_quantizer.h"

namespace lemma::cli {

struct NormOutputRanges {
  std::vector<std::vector<float>> attn, ffn;  // [layers][hidden]
  int64_t tokens = 0;
};

// `tokens` are scored in windows of `context` (each window's first token replaced by BOS).
NormOutputRanges calibrate_norm_outputs(const ModelSource& source, const std::vector<int32_t>& tokens, int64_t context,
                                        int num_threads);

// The tensors to quantize, with the attention/MLP norms and q/k/v/gate/up replaced by smoothed f32
// copies (owned by the result). Throws Unsupported for quantized sources.
struct SmoothedTensors {
  std::vector<quant::NamedTensor> tensors;
  std::vector<std::vector<float>> buffers;
  std::vector<float> factor_range;  // min and max s_j over all layers
};
SmoothedTensors smooth_tensors(const ModelSource& source, const std::vector<quant::NamedTensor>& tensors,
                               const NormOutputRanges& ranges, float alpha);

}  // namespace lemma::cli
