#include "lemma/model/moe/moe_layer.h"

#include <algorithm>
#include <cmath>

#include "lemma/base/trace.h"
#include "lemma/kernels/ops.h"
#include "lemma/model/moe/moe_router.h"

namespace lemma::moe {

namespace {

template <typename T>
std::span<T> grown(std::vector<T>& buffer, int64_t elements) {
  if (static_cast<int64_t>(buffer.size()) < elements) buffer.resize(static_cast<size_t>(elements));
  return std::span(buffer).first(static_cast<size_t>(elements));
}

// y = x . W^T for each output, as one team job (layers::linear_group's plan + run).
void run_linears(std::span<const float> x, int64_t M, std::span<const layers::LinearOutput> outputs,
                 const kernels::MatmulOptions& options, const MoeRun& run) {
  layers::LinearGroupPlan plan = layers::plan_linear_group(x, M, outputs, run.team, options);
  layers::run_linear_group(plan, run.team, *run.scratch, run.kernel_scratch);
}

// out[M, H] = down(silu(gate(x)) * up(x)) with gate_buf/up_buf [M, width] as scratch.
void swiglu(const ExpertWeights& w, std::span<const float> x, int64_t M, std::span<float> gate_buf,
            std::span<float> up_buf, std::span<float> out, const MoeRun& run) {
  const int64_t width = w.gate.shape[0];
  const auto n = static_cast<size_t>(M * width);
  const layers::LinearOutput gate_up[] = {{&w.gate, {}, gate_buf.first(n), {}}, {&w.up, {}, up_buf.first(n), {}}};
  run_linears(x, M, gate_up, run.options, run);
  kernels::silu_mul(gate_buf.first(n), up_buf.first(n), gate_buf.first(n), run.isa);
  const layers::LinearOutput down{&w.down, {}, out, {}};
  run_linears(gate_buf.first(n), M, std::span(&down, 1), run.options, run);
}

void record_stats(const ExpertDispatch& dispatch, int64_t num_experts, MoeStepStats& stats) {
  if (stats.tokens_per_expert.size() != static_cast<size_t>(num_experts)) stats.tokens_per_expert.assign(static_cast<size_t>(num_experts), 0);
  int64_t busiest = 0;
  for (int64_t e = 0; e < num_experts; ++e) {
    stats.tokens_per_expert[static_cast<size_t>(e)] += dispatch.tokens_of(e);
    busiest = std::max(busiest, dispatch.tokens_of(e));
    stats.active_experts += dispatch.tokens_of(e) > 0;
  }
  const double mean = static_cast<double>(dispatch.num_rows()) / static_cast<double>(num_experts);
  stats.max_load_imbalance = std::max(stats.max_load_imbalance, static_cast<double>(busiest) / mean);
  ++stats.num_moe_layers;
}

}  // namespace

void moe_forward(const ModelConfig& c, const MoeLayerWeights& w, std::span<const float> h, int64_t T,
                 std::span<float> out, MoeWorkspace& ws, const MoeRun& run) {
  const MoeConfig& moe = c.moe;
  const int64_t H = c.hidden_size, E = moe.num_experts, k = moe.routing.top_k, W = moe.expert_intermediate_size;
  const auto rows = static_cast<size_t>(T * H);

  // Router in f32 (moe_router.h says why), then each token's top-k, token by token.
  trace::Scope t_route("moe_route");
  const std::span<float> logits = grown(ws.router_logits, T * E);
  const TensorView router = w.router_view();
  const layers::LinearOutput router_out{&router, {}, logits, {}};
  kernels::MatmulOptions f32_options = run.options;
  f32_options.precision = kernels::MatmulPrecision::kF32Activations;
  run_linears(h.first(rows), T, std::span(&router_out, 1), f32_options, run);
  const std::span<int32_t> experts = grown(ws.experts, T * k);
  const std::span<float> weights = grown(ws.weights, T * k), scratch = grown(ws.route_scratch, route_scratch_floats(E));
  for (int64_t t = 0; t < T; ++t)
    route_token(logits.subspan(static_cast<size_t>(t * E), static_cast<size_t>(E)), w.score_bias, moe.routing, scratch,
                experts.subspan(static_cast<size_t>(t * k), static_cast<size_t>(k)),
                weights.subspan(static_cast<size_t>(t * k), static_cast<size_t>(k)));
  plan_dispatch(experts, k, E, ws.dispatch);
  record_stats(ws.dispatch, E, ws.stats);
  t_route.end();

  trace::Scope t_dispatch("moe_dispatch");
  const int64_t R = T * k;
  dispatch_rows(ws.dispatch, h, H, grown(ws.grouped_x, R * H), run.team);
  t_dispatch.end();

  // Each active expert once, over all its tokens of the step.
  trace::Scope t_experts("moe_experts");
  const std::span<float> g = grown(ws.grouped_gate, R * W), u = grown(ws.grouped_up, R * W);
  const std::span<float> y = grown(ws.grouped_out, R * H);
  for (int64_t e = 0; e < E; ++e) {
    const int64_t n = ws.dispatch.tokens_of(e), first = ws.dispatch.offsets[static_cast<size_t>(e)];
    if (n == 0) continue;
    swiglu(w.experts[static_cast<size_t>(e)], std::span<const float>(ws.grouped_x).subspan(static_cast<size_t>(first * H), static_cast<size_t>(n * H)), n,
           g.subspan(static_cast<size_t>(first * W)), u.subspan(static_cast<size_t>(first * W)),
           y.subspan(static_cast<size_t>(first * H), static_cast<size_t>(n * H)), run);
  }
  t_experts.end();

  // The shared expert over every token (reads h, so before the combine may overwrite it).
  std::span<float> shared;
  if (w.has_shared()) {
    trace::Scope t_shared("moe_shared_expert");
    const int64_t S = moe.shared_intermediate_size;
    shared = grown(ws.shared_out, T * H);
    swiglu(w.shared, h.first(rows), T, grown(ws.shared_gate, T * S), grown(ws.shared_up, T * S), shared, run);
    if (!w.shared_gate.empty()) {
      for (int64_t t = 0; t < T; ++t) {
        const float* x = h.data() + t * H;
        float dot = 0.0f;
        for (int64_t i = 0; i < H; ++i) dot += x[i] * w.shared_gate[static_cast<size_t>(i)];
        const float gate = 1.0f / (1.0f + std::exp(-dot));
        for (int64_t i = 0; i < H; ++i) shared[static_cast<size_t>(t * H + i)] *= gate;
      }
    }
  }

  trace::Scope t_combine("moe_combine");
  combine_rows(ws.dispatch, y, weights, H, out.first(rows), run.team);
  if (!shared.empty())
    for (size_t i = 0; i < rows; ++i) out[i] += shared[i];
}

}  // namespace lemma::moe
