// GPTQ calibration for `lemma quantize --type gptq... --calibrate FILE`: the input Hessian
// (quant/gptq.h) of every layer matrix, from forwards of the source model over the calibration
// tokens with an observer on the forward's matmul inputs (ForwardWorkspace::observe_linear_input):
// q/k/v share one, gate/up one, o and down one each. A layer's Hessians take
// 8 (H^2 + q_dim^2 + H^2 + I^2) bytes, so they are gathered for a run of consecutive layers at a
// time within a memory budget: asking for a layer outside the run held re-runs the calibration
// forwards for the run that starts there (one pass when every layer fits). Not thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "cli/model_source.h"
#include "lemma/model/forward_workspace.h"
#include "lemma/model/model.h"
#include "lemma/quant/gptq.h"

namespace lemma::cli {

class GptqHessians {
 public:
  // `tokens` are read in windows of `context`, each window's first token replaced by BOS.
  GptqHessians(const ModelSource& source, std::vector<int32_t> tokens, int64_t context, int threads,
               uint64_t budget_bytes);
  // The Hessian of the named matrix's input, or null for a tensor that is no layer matrix the
  // forward runs (embedding, head, experts, ...).
  const quant::InputHessian* for_tensor(const std::string& name);
  int passes() const { return passes_; }
  int64_t tokens() const { return static_cast<int64_t>(tokens_.size()); }

 private:
  void gather(int64_t first_layer);
  uint64_t layer_bytes() const;

  Model model_;
  std::vector<int32_t> tokens_;
  int64_t context_;
  int threads_;
  uint64_t budget_;
  std::map<std::string, std::pair<int64_t, LinearInput>> inputs_;  // tensor name -> (layer, input)
  int64_t first_ = 0, last_ = 0;                                  // layers held: [first_, last_)
  std::map<std::pair<int64_t, LinearInput>, std::unique_ptr<quant::InputHessian>> held_;
  int passes_ = 0;
};

}  // namespace lemma::cli
