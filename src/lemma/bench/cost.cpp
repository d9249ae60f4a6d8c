#include "lemma/bench/cost.h"

#include "lemma/tensor/tensor_view.h"

namespace lemma::bench {

double decode_bytes_per_token(uint64_t weight_read_bytes, uint64_t kv_bytes_per_token, double mean_context,
                              int64_t batch) {
  const double b = batch > 0 ? static_cast<double>(batch) : 1.0;
  return static_cast<double>(weight_read_bytes) / b + static_cast<double>(kv_bytes_per_token) * mean_context;
}

double mean_decode_context(int64_t steps, int64_t depth) {
  return steps > 0 ? static_cast<double>(depth) + (static_cast<double>(steps) + 1.0) / 2.0 : 0.0;
}

double prefill_flops(const ModelConfig& config, const ModelWeights& weights, int64_t tokens, int64_t depth) {
  double layer_macs = 0.0;  // multiply-adds per token
  for (const auto& l : weights.layers) {
    for (const TensorView* m : {&l.q, &l.k, &l.v, &l.o, &l.gate, &l.up, &l.down}) {
      if (m->data != nullptr) layer_macs += static_cast<double>(m->elements());
    }
    if (!l.moe.experts.empty()) {  // MoE (G27): the router, top_k experts and the shared expert per token
      const ExpertWeights& e = l.moe.experts.front();
      layer_macs += static_cast<double>(l.moe.router.size()) +
                    static_cast<double>(config.moe.routing.top_k) *
                        static_cast<double>(e.gate.elements() + e.up.elements() + e.down.elements());
      if (l.moe.has_shared())
        layer_macs += static_cast<double>(l.moe.shared.gate.elements() + l.moe.shared.up.elements() +
                                          l.moe.shared.down.elements());
    }
  }
  const double t = static_cast<double>(tokens);
  const double attended = t * (t + 1.0) / 2.0 + t * static_cast<double>(depth);  // sum over p of (depth + p + 1)
  const double attention_macs = 2.0 * static_cast<double>(config.num_layers) * static_cast<double>(config.q_dim()) * attended;
  const double head_macs = static_cast<double>(weights.lm_head.elements());
  return 2.0 * (layer_macs * t + attention_macs + head_macs);
}

}  // namespace lemma::bench
