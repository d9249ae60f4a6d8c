#include "lemma/model/model.h"

#include <algorithm>
#include <atomic>
#include <cmath>

#include "lemma/base/error.h"
#include "lemma/base/trace.h"
#include "lemma/dist/communicator.h"
#include "lemma/kernels/kernel_set.h"
#include "lemma/kernels/ops.h"
#include "lemma/model/interleaved_weights.h"
#include "lemma/model/layers/linear.h"
#include "lemma/model/layers/mla_attention.h"
#include "lemma/model/layers/paged_attention.h"
#include "lemma/model/layers/rms_norm.h"
#include "lemma/model/layers/rope.h"
#include "lemma/model/layers/tree_keys.h"
#include "lemma/model/moe/moe_layer.h"
#include "lemma/model/tensor_parallel_steps.h"
#include "lemma/model/lora/lora_delta.h"
#include "lemma/model/token_tree.h"

namespace lemma {

namespace {

uint64_t next_model_id() {
  static std::atomic<uint64_t> next_id{1};
  return next_id.fetch_add(1, std::memory_order_relaxed);
}

// An adapter loaded for another model would read or write past the activations.
void check_lora_fits(const LoraAdapter& a, const ModelConfig& c, size_t s) {
  if (static_cast<int64_t>(a.layers.size()) != c.num_layers)
    fail<InvalidArgument>("forward: sequence {}: LoRA adapter '{}' has {} layers, the model {}", s, a.name, a.layers.size(), c.num_layers);
  const ModelConfig& cc = c;
  const int64_t in[] = {cc.hidden_size, cc.hidden_size, cc.hidden_size, cc.q_dim(), cc.hidden_size, cc.hidden_size, cc.intermediate_size};
  const int64_t out[] = {cc.q_dim(), cc.kv_dim(), cc.kv_dim(), cc.hidden_size, cc.intermediate_size, cc.intermediate_size, cc.hidden_size};
  for (const auto& layer : a.layers)
    for (size_t t = 0; t < kNumLoraTargets; ++t)
      if (layer[t] && (layer[t]->a.shape[1] != in[t] || layer[t]->out_features() != out[t]))
        fail<InvalidArgument>("forward: sequence {}: LoRA adapter '{}' does not fit this model's {} ({} x {}, the model's {} x {})",
                              s, a.name, lora_target_name(static_cast<LoraTarget>(t)), layer[t]->out_features(),
                              layer[t]->a.shape[1], out[t], in[t]);
}

}  // namespace

Model Model::from_tensors(ModelConfig config, WeightFormat format, const TensorLookup& lookup,
                          std::shared_ptr<const void> owner, bool owns_sources, const RuntimeOptions& runtime) {
  config.validate();
  Model m;
  m.runtime_ = runtime;
  m.runtime_.isa = kernels::checked_isa(runtime.isa);
  m.weights_ = load_model_weights(config, format, lookup);
  if (const auto& comm = runtime.tensor_parallel; comm && comm->size() > 1) {  // G7: keep this rank's slices only
    const auto slices = dist::plan_tensor_parallel(
        {config.num_heads, config.num_kv_heads, config.intermediate_size, config.vocab_size}, comm->rank(), comm->size());
    m.tp_ = shard_model_weights(m.weights_, config, format, slices, comm.get());
    config = shard_config(config, slices);
    owns_sources = false;  // the row-parallel slices are heap copies, not the file's pages
  }
  m.interleaved_ = interleave_matmul_weights(m.weights_, m.runtime_, owns_sources);
  m.rope_ = compute_rope_frequencies(config.rope, 0);
  m.config_ = std::move(config);
  m.format_ = format;
  m.owner_ = std::move(owner);
  m.id_ = next_model_id();
  return m;
}

Model Model::first_layers(int64_t num_layers) const {
  if (num_layers < 1 || num_layers > config_.num_layers)
    fail<InvalidArgument>("first_layers: {} layers asked of a model with {}", num_layers, config_.num_layers);
  Model m;
  m.config_ = config_;
  m.config_.num_layers = num_layers;
  if (m.config_.sliding_window.size() > static_cast<size_t>(num_layers))
    m.config_.sliding_window.resize(static_cast<size_t>(num_layers));
  m.format_ = format_;
  m.runtime_ = runtime_;
  m.weights_ = weights_;
  m.weights_.layers.resize(static_cast<size_t>(num_layers));
  m.rope_ = rope_;
  m.owner_ = owner_;
  m.interleaved_ = interleaved_;
  m.tp_ = tp_;
  m.id_ = next_model_id();  // its own captured decode plans
  return m;
}

void Model::validate(const ForwardBatch& batch, const KvCache& cache, std::span<float> logits) const {
  const ModelConfig& c = config_;
  if (cache.num_layers() != c.num_layers || cache.num_kv_heads() != c.cache_kv_heads() ||
      cache.head_dim() != c.cache_head_dim() || cache.latent() != c.mla.enabled())
    fail<InvalidArgument>("forward: cache holds {} layers x {} kv heads x {}{}, the model needs {} x {} x {}{}",
                          cache.num_layers(), cache.num_kv_heads(), cache.head_dim(), cache.latent() ? " (latent)" : "",
                          c.num_layers, c.cache_kv_heads(), c.cache_head_dim(), c.mla.enabled() ? " (latent)" : "");
  for (size_t s = 0; s < batch.sequences.size(); ++s) {
    const SequenceInput& seq = batch.sequences[s];
    if (seq.num_cached < 0) fail<InvalidArgument>("forward: sequence {}: negative num_cached", s);
    if (seq.num_tokens() == 0 && seq.logits != LogitsRequest::kNone)
      fail<InvalidArgument>("forward: sequence {}: logits requested but no new tokens", s);
    for (int32_t id : seq.token_ids)
      if (id < 0 || id >= c.vocab_size)
        fail<InvalidArgument>("forward: sequence {}: token id {} outside the vocabulary [0, {})", s, id, c.vocab_size);
    if (seq.is_tree()) {
      if (static_cast<int64_t>(seq.tree_parents.size()) != seq.num_tokens())
        fail<InvalidArgument>("forward: sequence {}: {} tree parents for {} new tokens", s, seq.tree_parents.size(),
                              seq.num_tokens());
      validate_token_tree(seq.tree_parents, s);
      // A node's window would start at its own depth, which the shared cached splits cannot follow.
      if (std::any_of(c.sliding_window.begin(), c.sliding_window.end(), [](int64_t w) { return w > 0; }))
        fail<InvalidArgument>("forward: sequence {}: token trees are not supported with a sliding window", s);
    }
    if (c.mla.enabled() && (seq.streaming.enabled() || seq.lora != nullptr))
      fail<InvalidArgument>("forward: sequence {}: {} is not supported with latent attention (MLA)", s,
                            seq.lora != nullptr ? "a LoRA adapter" : "streaming attention sinks");
    if (!seq.input_embeddings.empty() && static_cast<int64_t>(seq.input_embeddings.size()) != seq.num_tokens() * c.hidden_size)
      fail<InvalidArgument>("forward: sequence {}: {} input embedding values for {} tokens of {}", s,
                            seq.input_embeddings.size(), seq.num_tokens(), c.hidden_size);
    if (seq.streaming.enabled()) validate_streaming(seq, s);
    const int64_t needed_blocks = (seq.context_length() + cache.block_size() - 1) / cache.block_size();
    if (static_cast<int64_t>(seq.block_table.size()) < needed_blocks)
      fail<InvalidArgument>("forward: sequence {}: {} tokens need {} blocks, block table has {}", s,
                            seq.context_length(), needed_blocks, seq.block_table.size());
    // Blocks wholly before the sliding window, or wholly inside a streaming sequence's evicted
    // middle, are never read and may have been freed.
    const int64_t bs = cache.block_size();
    const int64_t dead_begin = seq.streaming.enabled() ? (seq.streaming.num_sinks + bs - 1) / bs : 0;
    const int64_t dead_end = seq.streaming.enabled() ? seq.streaming.dead_end(seq.num_cached) / bs
                                                     : c.first_attended_position(seq.num_cached) / bs;
    for (int64_t b = 0; b < needed_blocks; ++b) {
      if (b >= dead_begin && b < dead_end) continue;
      const int32_t id = seq.block_table[static_cast<size_t>(b)];
      if (id < 0 || id >= cache.num_blocks())
        fail<InvalidArgument>("forward: sequence {}: block id {} outside the cache's {} blocks", s, id,
                              cache.num_blocks());
    }
  }
  for (size_t s = 0; s < batch.sequences.size(); ++s)
    if (tp_ && batch.sequences[s].lora != nullptr)
      fail<InvalidArgument>("forward: sequence {}: LoRA adapters are not supported under tensor parallelism", s);
  for (size_t s = 0; s < batch.sequences.size(); ++s)
    if (const LoraAdapter* a = batch.sequences[s].lora; a != nullptr && (s == 0 || batch.sequences[s - 1].lora != a))
      check_lora_fits(*a, c, s);
  const int64_t needed = batch.num_logit_rows() * c.vocab_size;
  if (static_cast<int64_t>(logits.size()) < needed)
    fail<InvalidArgument>("forward: logits buffer has {} floats, needs {}", logits.size(), needed);
}

void Model::validate_streaming(const SequenceInput& seq, size_t s) const {
  const ModelConfig& c = config_;
  if (const std::string error = streaming_window_error(seq.streaming, 0); !error.empty())
    fail<InvalidArgument>("forward: sequence {}: {}", s, error);
  if (seq.is_tree()) fail<InvalidArgument>("forward: sequence {}: token trees are not supported with attention sinks", s);
  if (std::any_of(c.sliding_window.begin(), c.sliding_window.end(), [](int64_t w) { return w > 0; }))
    fail<InvalidArgument>("forward: sequence {}: attention sinks are not supported on a model with sliding-window "
                          "layers", s);
  if (c.rope.scaling.type == RopeScalingType::kDynamicNtk && c.rope.scaling.freq_divisors.empty())
    fail<InvalidArgument>("forward: sequence {}: attention sinks need fixed RoPE frequencies, not dynamic NTK", s);
}

namespace {

// The forward's matmul groups, in the order of DecodePlanCache slots: four per layer, then the head.
enum MatmulSlot : size_t { kQkv, kO, kGateUp, kDown, kSlotsPerLayer };

// The RMSNorm that makes a layer's input rows in ws.normed: from the residual alone (the first
// layer's attn_norm), or fused with the residual add of the block before (delta = ws.normed, the
// o_proj or down output: residual += delta first).
struct NormStep {
  const char* name;  // trace range
  std::span<const float> weight;
  bool add_first;

  // Token rows [t0, t1); each row reads and writes only itself.
  void run(const ModelConfig& c, ForwardWorkspace& ws, kernels::Isa isa, int64_t t0, int64_t t1) const {
    const int64_t H = c.hidden_size;
    const auto at = static_cast<size_t>(t0 * H), n = static_cast<size_t>((t1 - t0) * H);
    const auto residual = std::span(ws.residual).subspan(at, n), normed = std::span(ws.normed).subspan(at, n);
    if (add_first) {
      layers::add_rms_norm(residual, normed, t1 - t0, H, weight, c.rms_norm_eps, normed, isa);
    } else {
      layers::rms_norm(residual, t1 - t0, H, weight, c.rms_norm_eps, normed, isa);
    }
  }
};

// Everything one forward shares between its layers.
struct StepState {
  const ModelConfig& config;
  const RuntimeOptions& runtime;
  ForwardWorkspace& ws;
  std::span<const layers::AttentionSequence> slices;
  int64_t num_tokens;
  DecodePlanCache::Step& plans;
  std::span<const LoraSegment> lora;  // token rows per adapter; empty: no adapter in this step
  const TensorParallelShard* tp;      // null: one rank

  // Under tensor parallelism a row-parallel matmul (o_proj, down) leaves each rank a partial sum of
  // its output rows: add them up over the group (G7).
  void reduce_partial(std::span<float> y) const {
    if (tp == nullptr) return;
    trace::Scope t("tp_all_reduce");
    all_reduce_partial(*tp, y.first(static_cast<size_t>(num_tokens * config.hidden_size)));
  }

  // y_i += LoRA deltas of the rows that run on an adapter (after the base matmul wrote y_i).
  void add_lora(int64_t layer, std::span<const float> x, int64_t K, std::initializer_list<LoraOutput> outputs) const {
    if (lora.empty()) return;
    trace::Scope t("lora");
    add_lora_deltas(layer, x, K, lora, std::span(outputs.begin(), outputs.size()), ws.team.get(), runtime.isa, ws.lora_scratch);
  }

  // Shows a layer's matmul input to the workspace's observer, if any (the head's is not shown).
  void observe(int64_t layer, MatmulSlot slot, std::span<const float> x, int64_t M,
               std::span<const layers::LinearOutput> outputs) const {
    if (!ws.observe_linear_input || layer >= config.num_layers) return;
    const int64_t K = outputs[0].weight->shape[1];
    ws.observe_linear_input(layer, kLinearInputs[slot], x.first(static_cast<size_t>(M * K)), M, K);
  }

  // y = x . W^T for each output (layers::linear_group), with the captured plan when there is one.
  // The kernel range `name` covers the run only: planning is the framework's time.
  void linear(const char* name, int64_t layer, MatmulSlot slot, std::span<const float> x, int64_t M,
              std::span<const layers::LinearOutput> outputs) const {
    observe(layer, slot, x, M, outputs);
    ThreadTeam* team = ws.team.get();
    layers::LinearGroupPlan& plan = plans.plan(static_cast<size_t>(layer) * kSlotsPerLayer + slot, x, M, outputs, team, runtime.matmul_options());
    trace::Scope t_run(name);
    layers::run_linear_group(plan, team, ws.activations, ws.kernel_scratch);
  }

  // The same over x, whose rows `write_x` writes first, on the team, each range of rows then
  // converted for the kernels while it is in cache (layers::write_linear_group_input, G20).
  void written_linear(const char* write_name, RangeFnRef write_x, const char* name, int64_t layer, MatmulSlot slot,
                      std::span<const float> x, std::span<const layers::LinearOutput> outputs) const {
    ThreadTeam* team = ws.team.get();
    layers::LinearGroupPlan& plan = plans.plan(static_cast<size_t>(layer) * kSlotsPerLayer + slot, x, num_tokens, outputs, team, runtime.matmul_options());
    trace::Scope t_write(write_name);
    layers::write_linear_group_input(plan, team, ws.activations, write_x);
    t_write.end();
    observe(layer, slot, x, num_tokens, outputs);
    trace::Scope t_run(name);
    layers::run_prepared_linear_group(plan, team, ws.kernel_scratch);
  }

  // x = ws.normed, written by `norm` (fused with the residual add before it when it has one).
  void normed_linear(const NormStep& norm, const char* name, int64_t layer, MatmulSlot slot,
                     std::span<const layers::LinearOutput> outputs) const {
    written_linear(norm.name, [&](int64_t t0, int64_t t1) { norm.run(config, ws, runtime.isa, t0, t1); }, name, layer, slot, ws.normed, outputs);
  }
};

// normed = attn_norm(residual) (`norm`: fused with the previous block's residual add and with the
// conversion of x for q/k/v, G20); residual += o_proj(attention(normed)), writing this layer's new
// K/V into the cache. On return normed holds the o_proj output (the delta of the next add).
void attention_block(const StepState& st, const LayerWeights& w, int64_t layer, KvLayerView kv, const NormStep& norm) {
  const ModelConfig& c = st.config;
  ForwardWorkspace& ws = st.ws;
  ThreadTeam* team = ws.team.get();
  const int64_t T = st.num_tokens, hd = c.head_dim, nh = c.num_heads, nkv = c.num_kv_heads;

  const layers::LinearOutput qkv[] = {
      {&w.q, w.q_bias, ws.q, w.q_order}, {&w.k, w.k_bias, ws.k, w.k_order}, {&w.v, w.v_bias, ws.v, w.v_order}};
  st.normed_linear(norm, "qkv", layer, kQkv, qkv);
  st.add_lora(layer, ws.normed, c.hidden_size, {{LoraTarget::kQ, ws.q}, {LoraTarget::kK, ws.k}, {LoraTarget::kV, ws.v}});
  if (c.qk_norm) {
    trace::Scope t_qk_norm("qk_norm");
    layers::rms_norm(ws.q, T * nh, hd, w.q_norm, c.rms_norm_eps, ws.q, st.runtime.isa);
    layers::rms_norm(ws.k, T * nkv, hd, w.k_norm, c.rms_norm_eps, ws.k, st.runtime.isa);
  }
  // One pass per token (G20): RoPE on its q and k heads with the angles the forward computed once
  // for every layer, then its key (after RoPE) and value into the cache, encoded in the cache's
  // dtype (G23; int8/fp8 rows need the whole rotated row for their scale, so k is rotated first).
  // Tokens write distinct cache slots, so ranges of them run on the team.
  trace::Scope t_rope("rope_kv_write");
  const auto half = static_cast<size_t>(c.rope.rotary_dim / 2);
  parallel_rows(team, T, (nh + 2 * nkv) * hd, [&](int64_t t0, int64_t t1) {
    for (const layers::AttentionSequence& sl : st.slices) {
      const int64_t r0 = std::max(t0, sl.token_offset), r1 = std::min(t1, sl.token_offset + sl.num_tokens);
      for (int64_t r = r0; r < r1; ++r) {
        if (sl.streaming.enabled()) {  // the row's query for the sinks (G10), from the unrotated q
          float* sink_q = ws.sink_q.data() + r * nh * hd;
          std::copy_n(ws.q.data() + r * nh * hd, nh * hd, sink_q);
          layers::rotate_heads(sink_q, nh, hd, ws.sink_rope_cos.data() + static_cast<size_t>(r) * half,
                               ws.sink_rope_sin.data() + static_cast<size_t>(r) * half, half, c.rope.layout);
        }
        const float* cos = ws.rope_cos.data() + static_cast<size_t>(r) * half;
        const float* sin = ws.rope_sin.data() + static_cast<size_t>(r) * half;
        layers::rotate_heads(ws.q.data() + r * nh * hd, nh, hd, cos, sin, half, c.rope.layout);
        layers::rotate_heads(ws.k.data() + r * nkv * hd, nkv, hd, cos, sin, half, c.rope.layout);
        // New token i goes to slot num_cached + i (a tree node's position is num_cached + its depth).
        const int64_t slot = sl.context_length - sl.num_tokens + (r - sl.token_offset);
        write_kv_slot(kv, kv.slot(sl.block_table, slot), ws.k.data() + r * nkv * hd, ws.v.data() + r * nkv * hd);
      }
    }
  });
  t_rope.end();
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  const layers::AttentionParams attention{nh, scale, c.layer_sliding_window(layer)};
  const int64_t scratch = layers::paged_attention_scratch_floats(st.slices, attention, hd);
  // Grows geometrically (the split count grows with the context), so decode steps rarely allocate.
  if (static_cast<int64_t>(ws.scores.size()) < scratch)
    ws.scores.resize(static_cast<size_t>(std::max<int64_t>(scratch, 2 * static_cast<int64_t>(ws.scores.size()))));
  trace::Scope t_attention("attention");
  layers::paged_attention(ws.q, kv, st.slices, attention, ws.scores, ws.attn_out, team, st.runtime.isa, ws.kernel_scratch);
  t_attention.end();
  const layers::LinearOutput o{&w.o, {}, ws.normed, w.o_order};
  st.linear("o_proj", layer, kO, ws.attn_out, T, std::span(&o, 1));
  st.add_lora(layer, ws.attn_out, c.q_dim(), {{LoraTarget::kO, ws.normed}});
  st.reduce_partial(ws.normed);
}

// The attention block of an MLA layer (G28): normed = attn_norm(residual (+ normed)), then normed =
// o_proj(latent attention(normed)), writing the new tokens' latent rows into the cache.
void mla_attention_block(const StepState& st, const LayerWeights& w, KvLayerView kv, const NormStep& norm) {
  ForwardWorkspace& ws = st.ws;
  trace::Scope t_norm(norm.name);
  parallel_rows(ws.team.get(), st.num_tokens, st.config.hidden_size,
                [&](int64_t t0, int64_t t1) { norm.run(st.config, ws, st.runtime.isa, t0, t1); });
  t_norm.end();
  const auto half = static_cast<size_t>(st.config.rope.rotary_dim / 2);
  const layers::MlaStep step{st.slices,
                             std::span<const float>(ws.rope_cos).first(static_cast<size_t>(st.num_tokens) * half),
                             std::span<const float>(ws.rope_sin).first(static_cast<size_t>(st.num_tokens) * half),
                             st.runtime.mla_attention, ws.team.get(), st.runtime.isa, st.runtime.matmul_options(), &ws.activations,
                             ws.kernel_scratch};
  layers::mla_attention(st.config, w.mla, ws.normed, st.num_tokens, kv, step, ws.mla, ws.normed);
}

// normed = ffn_norm(residual + normed) (fused with that add and with x's conversion for gate/up);
// residual += down(silu(gate(normed)) * up(normed)). On return normed holds the down output.
void mlp_block(const StepState& st, const LayerWeights& w, int64_t layer) {
  const ModelConfig& c = st.config;
  ForwardWorkspace& ws = st.ws;
  const int64_t I = c.intermediate_size;
  const layers::LinearOutput gate_up[] = {{&w.gate, {}, ws.gate, w.gate_order}, {&w.up, {}, ws.up, w.up_order}};
  st.normed_linear({"add_ffn_norm", w.ffn_norm, true}, "gate_up", layer, kGateUp, gate_up);
  st.add_lora(layer, ws.normed, c.hidden_size, {{LoraTarget::kGate, ws.gate}, {LoraTarget::kUp, ws.up}});
  // down's input silu(gate) * up, row by row, each range converted for down's kernel while in cache.
  const layers::LinearOutput down{&w.down, {}, ws.normed, w.down_order};
  const auto silu_mul_rows = [&](int64_t t0, int64_t t1) {
    const auto rows = std::span(ws.gate).subspan(static_cast<size_t>(t0 * I), static_cast<size_t>((t1 - t0) * I));
    kernels::silu_mul(rows, std::span(ws.up).subspan(static_cast<size_t>(t0 * I), rows.size()), rows, st.runtime.isa);
  };
  st.written_linear("silu_mul", silu_mul_rows, "down", layer, kDown, ws.gate, std::span(&down, 1));
  st.add_lora(layer, ws.gate, I, {{LoraTarget::kDown, ws.normed}});
  st.reduce_partial(ws.normed);
}

// A MoE layer's MLP (G27): normed = ffn_norm(residual + normed), then normed = moe(normed) (the
// routed experts over the step's tokens grouped by expert, plus the shared expert). Its matmuls are
// planned per step (the experts' row counts change), not captured.
void moe_block(const StepState& st, const LayerWeights& w) {
  ForwardWorkspace& ws = st.ws;
  const NormStep norm{"add_ffn_norm", w.ffn_norm, true};
  trace::Scope t_norm(norm.name);
  parallel_rows(ws.team.get(), st.num_tokens, st.config.hidden_size,
                [&](int64_t t0, int64_t t1) { norm.run(st.config, ws, st.runtime.isa, t0, t1); });
  t_norm.end();
  const moe::MoeRun run{ws.team.get(), st.runtime.matmul_options(), st.runtime.isa, &ws.activations, ws.kernel_scratch};
  moe::moe_forward(st.config, w.moe, ws.normed, st.num_tokens, ws.normed, ws.moe, run);
}

// The slot tables of the batch's token trees (layers/tree_keys.h), in ws.tree_slots, each slice of
// a tree pointing at its TreeKeys. Reads ws.positions (the nodes' positions); a batch without
// trees touches nothing.
void build_tree_keys(const ForwardBatch& batch, int64_t block_size, ForwardWorkspace& ws) {
  // Calls fn(sequence index, its positions, its slot-table entries) for each tree of the batch.
  const auto for_each_tree = [&](auto&& fn) {
    size_t row = 0;
    for (size_t s = 0; s < batch.sequences.size(); ++s) {
      const SequenceInput& seq = batch.sequences[s];
      const auto positions = std::span<const int64_t>(ws.positions).subspan(row, static_cast<size_t>(seq.num_tokens()));
      row += positions.size();
      if (!seq.is_tree()) continue;
      const int64_t max_depth = *std::max_element(positions.begin(), positions.end()) - seq.num_cached;
      fn(s, positions, static_cast<size_t>(layers::tree_key_span(seq.num_cached, max_depth) * seq.num_tokens()));
    }
  };
  size_t total = 0;
  for_each_tree([&](size_t, std::span<const int64_t>, size_t entries) { total += entries; });
  if (total == 0) return;
  if (ws.tree_slots.size() < total) ws.tree_slots.resize(total);
  size_t offset = 0;
  for_each_tree([&](size_t s, std::span<const int64_t> positions, size_t entries) {
    const SequenceInput& seq = batch.sequences[s];
    ws.trees.push_back(layers::make_tree_keys(seq.tree_parents, seq.num_cached, positions, seq.block_table, block_size,
                                              std::span(ws.tree_slots).subspan(offset, entries)));
    ws.slices[s].tree = &ws.trees.back();
    offset += entries;
  });
}

// Attention sinks (G10): the RoPE angles of each of a streaming sequence's rows at its sink query
// position, and its slice's sink_q rows (filled by the layers' RoPE pass). ws.sink_* hold T rows.
void add_sink_queries(const SequenceInput& seq, std::span<const int64_t> positions, size_t first,
                      const RopeFrequencies& freqs, int64_t q_dim, ForwardWorkspace& ws,
                      layers::AttentionSequence& slice) {
  const size_t half = freqs.inv_freq.size();
  const auto sink_positions = std::span(ws.sink_positions).subspan(first, positions.size());
  for (size_t i = 0; i < positions.size(); ++i) sink_positions[i] = seq.streaming.sink_query_position(positions[i]);
  layers::rope_angles(sink_positions, freqs, std::span(ws.sink_rope_cos).subspan(first * half),
                      std::span(ws.sink_rope_sin).subspan(first * half));
  slice.streaming = seq.streaming;
  slice.sink_q = ws.sink_q.data() + static_cast<int64_t>(first) * q_dim;
}

}  // namespace

void Model::forward(const ForwardBatch& batch, KvCache& cache, ForwardWorkspace& ws, std::span<float> logits) const {
  trace::Scope t_forward("forward", "step", "tokens", batch.num_tokens());
  validate(batch, cache, logits);
  if (tp_ && runtime_.tensor_parallel_leader && tp_->slices.rank == 0) send_forward_step(*tp_->comm, batch, cache);
  const ModelConfig& c = config_;
  const int64_t T = batch.num_tokens();
  const int64_t H = c.hidden_size;
  ws.reserve(c, T, batch.num_logit_rows(), batch.max_context_length());
  ws.reserve_kernel_scratch(kernels::kernel_set(runtime_.isa).scratch_bytes());
  ws.moe.stats.clear();
  if (T == 0) return;

  // Embedding lookup, positions and RoPE angles (cos/sin per row, shared by every layer); one
  // attention slice per sequence, in the workspace's lists (cleared, so their capacity is reused
  // and a steady-state step allocates nothing; dynamic-NTK RoPE still computes a table per
  // sequence and step).
  std::vector<layers::AttentionSequence>& slices = ws.slices;
  std::vector<RopeFrequencies>& dynamic_tables = ws.dynamic_rope;
  slices.clear();
  dynamic_tables.clear();
  slices.reserve(batch.sequences.size());
  ws.trees.clear();
  ws.trees.reserve(batch.sequences.size());  // slices point at its entries: no reallocation below
  const bool dynamic_rope = c.rope.scaling.type == RopeScalingType::kDynamicNtk && c.rope.scaling.freq_divisors.empty();
  if (dynamic_rope) dynamic_tables.reserve(batch.sequences.size());
  const auto half = static_cast<size_t>(c.rope.rotary_dim / 2);
  if (std::any_of(batch.sequences.begin(), batch.sequences.end(),
                  [](const SequenceInput& seq) { return seq.streaming.enabled(); })) {
    const auto rows = static_cast<size_t>(T);
    if (ws.sink_positions.size() < rows) ws.sink_positions.resize(rows);
    if (ws.sink_rope_cos.size() < rows * half) ws.sink_rope_cos.resize(rows * half);
    if (ws.sink_rope_sin.size() < rows * half) ws.sink_rope_sin.resize(rows * half);
    if (ws.sink_q.size() < rows * static_cast<size_t>(c.q_dim())) ws.sink_q.resize(rows * static_cast<size_t>(c.q_dim()));
  }
  int64_t row = 0;
  for (const SequenceInput& seq : batch.sequences) {
    const auto first = static_cast<size_t>(row);
    const auto n = static_cast<size_t>(seq.num_tokens());
    const std::span<int64_t> positions = std::span(ws.positions).subspan(first, n);
    if (seq.is_tree()) {
      token_tree_depths(seq.tree_parents, positions);
      for (int64_t& p : positions) p += seq.num_cached;
    } else {
      for (size_t i = 0; i < n; ++i) positions[i] = seq.num_cached + static_cast<int64_t>(i);
    }
    const std::span<float> embedded = std::span(ws.residual).subspan(first * static_cast<size_t>(H), n * static_cast<size_t>(H));
    if (seq.input_embeddings.empty()) {
      embed_tokens(weights_.token_embedding, tp_.get(), seq.token_ids, H, embedded);
    } else {  // MTP (G30): the module's rows come embedded already
      std::copy_n(seq.input_embeddings.begin(), n * static_cast<size_t>(H), embedded.begin());
    }
    row += seq.num_tokens();
    // Dynamic NTK scales by the context length: a tree's is its deepest path's as a chain.
    const int64_t rope_context = n == 0 ? seq.num_cached : *std::max_element(positions.begin(), positions.end()) + 1;
    const RopeFrequencies& freqs =
        dynamic_rope ? dynamic_tables.emplace_back(compute_rope_frequencies(c.rope, rope_context)) : rope_;
    layers::rope_angles(positions, freqs, std::span(ws.rope_cos).subspan(first * half),
                        std::span(ws.rope_sin).subspan(first * half));
    slices.push_back({static_cast<int64_t>(first), seq.num_tokens(), seq.context_length(), seq.block_table});
    if (seq.streaming.enabled()) add_sink_queries(seq, positions, first, freqs, c.q_dim(), ws, slices.back());
  }
  if (tp_) all_reduce_partial(*tp_, std::span(ws.residual).first(static_cast<size_t>(T * H)));  // vocab-parallel rows
  build_tree_keys(batch, cache.block_size(), ws);

  // The LM head writes the logits, or under tensor parallelism this rank's share of them.
  std::span<float> head_out = logits;
  if (tp_) {
    const auto local = static_cast<size_t>(local_logits_floats(*tp_, batch.num_logit_rows()));
    if (ws.tp_logits.size() < local) ws.tp_logits.resize(local);
    head_out = ws.tp_logits;
  }
  // Captured plans for this row count over these buffers, or planned now (and captured).
  const DecodePlanCache::Key key{id_, ws.team.get(), T, batch.num_logit_rows(),
                                 {ws.normed.data(), ws.q.data(), ws.k.data(), ws.v.data(), ws.attn_out.data(),
                                  ws.gate.data(), ws.up.data(), ws.head_input.data(), head_out.data()}};
  DecodePlanCache::Step plans =
      ws.decode_plans.begin(key, static_cast<size_t>(c.num_layers) * kSlotsPerLayer + 1, runtime_.decode_plans);
  ws.lora_segments.clear();
  if (std::any_of(batch.sequences.begin(), batch.sequences.end(), [](const SequenceInput& s) { return s.lora != nullptr; })) {
    ws.lora_adapters.clear();
    ws.lora_tokens.clear();
    for (const SequenceInput& seq : batch.sequences) {
      ws.lora_adapters.push_back(seq.lora);
      ws.lora_tokens.push_back(seq.num_tokens());
    }
    lora_segments(ws.lora_adapters, ws.lora_tokens, ws.lora_segments);
  }
  const StepState state{c, runtime_, ws, slices, T, plans, ws.lora_segments, tp_.get()};
  // Each norm is fused with the residual add before it (but the first) and with the conversion of
  // the next matmul's x; the final one runs alone (the LM head reads only the rows that want logits).
  for (int64_t l = 0; l < c.num_layers; ++l) {
    trace::Scope t_layer("layer", "layer", "layer", l);
    const LayerWeights& w = weights_.layers[static_cast<size_t>(l)];
    const NormStep attn_norm = l == 0 ? NormStep{"attn_norm", w.attn_norm, false} : NormStep{"add_attn_norm", w.attn_norm, true};
    if (c.mla.enabled()) {
      mla_attention_block(state, w, cache.layer(l), attn_norm);
    } else {
      attention_block(state, w, l, cache.layer(l), attn_norm);
    }
    if (c.moe.is_moe_layer(l)) {
      moe_block(state, w);
    } else {
      mlp_block(state, w, l);
    }
  }
  const NormStep final_norm{"add_final_norm", weights_.final_norm, true};
  trace::Scope t_final_norm(final_norm.name);
  parallel_rows(ws.team.get(), T, H, [&](int64_t t0, int64_t t1) { final_norm.run(c, ws, runtime_.isa, t0, t1); });
  t_final_norm.end();

  // Gather the normalised rows that want logits, project. (Every row went through the final norm
  // with the last residual add; a row's norm does not depend on the others.)
  int64_t out_rows = 0;
  for (size_t s = 0; s < slices.size(); ++s) {
    const auto& sl = slices[s];
    const int64_t count = batch.sequences[s].num_logit_rows();
    if (count == 0) continue;
    const int64_t first = sl.num_tokens - count;  // kAll: every row; kLast: the last one
    std::copy_n(ws.normed.data() + (sl.token_offset + first) * H, count * H, ws.head_input.data() + out_rows * H);
    out_rows += count;
  }
  if (out_rows > 0) {
    const layers::LinearOutput head{&weights_.lm_head, {}, head_out, weights_.lm_head_order};
    state.linear("lm_head", c.num_layers, kQkv, ws.head_input, out_rows, std::span(&head, 1));  // the slot after the layers'
    if (tp_) {
      trace::Scope t_gather("tp_gather_logits");
      gather_logits(*tp_, ws.tp_logits, out_rows, c.vocab_size, ws.tp_gathered, logits);
    }
  }
  plans.commit();
}

}  // namespace lemma
