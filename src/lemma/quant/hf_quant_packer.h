// Packs a checkpoint's matrices into a Hugging Face GPTQ / AWQ / FP8 checkpoint's tensors
// (gptq_packing.h, awq_packing.h, fp8_weight.h). GPTQ matrices whose input Hessian the calibration
// gives are quantized by GPTQ's error compensation (gptq.h; act-order then sorts by that Hessian's
// diagonal); the others, and AWQ / FP8, round to nearest (no AWQ scale search).
// Which matrices: "*weight" 2-D tensors other than the token embedding and output matrix (as
// GPTQ/AWQ checkpoints leave lm_head), not matched by a keep pattern, whose shape the format
// packs (GPTQ: N and K multiples of 32 / bits; AWQ: N of 8, K of the group; FP8: any); the rest are
// stored as they were (GGUF block types widened to f32). Without a Hessian, GPTQ act-order (desc_act) orders
// the input channels by decreasing max |W[:, k]| (a weight-only stand-in for the Hessian diagonal
// GPTQ sorts by) and writes that g_idx; as GPTQ's Hessian comes from the layer input, the max runs
// over every matrix reading the same input (q/k/v, gate/up), which so share one order. Not thread-safe (the result owns the bytes its views
// point into).
#pragma once

#include <string>
#include <vector>

#include "lemma/quant/gptq.h"
#include "lemma/quant/hf_quant_config.h"
#include "lemma/quant/weight_quantizer.h"

namespace lemma::quant {

struct HfQuantizedCheckpoint {
  std::vector<SafetensorsTensor> tensors;
  std::vector<std::vector<uint8_t>> buffers;  // the views' bytes
  std::vector<WeightTensorPlan> plans;

  HfQuantizedCheckpoint() = default;
  HfQuantizedCheckpoint(HfQuantizedCheckpoint&&) = default;
  HfQuantizedCheckpoint& operator=(HfQuantizedCheckpoint&&) = default;
};

HfQuantizedCheckpoint pack_hf_checkpoint(const std::vector<NamedTensor>& tensors, const HfQuantConfig& config,
                                         const std::vector<std::string>& keep_patterns,
                                         const WeightQuantizeProgress& progress = {},
                                         const GptqCalibration& calibration = {});

}  // namespace lemma::quant
