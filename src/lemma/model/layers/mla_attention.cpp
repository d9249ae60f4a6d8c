#include "lemma/model/layers/mla_attention.h"

#include <algorithm>
#include <cassert>

#include "lemma/base/trace.h"
#include "lemma/kernels/attention/kv_quant.h"
#include "lemma/model/layers/rms_norm.h"
#include "lemma/model/layers/rope.h"

namespace lemma::layers {

namespace {

template <typename T>
void grow(std::vector<T>& v, int64_t n) {
  if (static_cast<int64_t>(v.size()) < n) v.resize(static_cast<size_t>(n));
}

// y = x . W^T for up to kMaxLinearGroup outputs over the same x, with the forward's options.
void run_linears(const MlaStep& st, std::span<const float> x, int64_t M, std::span<const LinearOutput> outputs) {
  LinearGroupPlan plan = plan_linear_group(x, M, outputs, st.team, st.options);
  run_linear_group(plan, st.team, *st.activations, st.kernel_scratch);
}

void run_linear(const MlaStep& st, std::span<const float> x, int64_t M, const TensorView& w, std::span<float> y) {
  const LinearOutput out{&w, {}, y, {}};
  run_linears(st, x, M, std::span(&out, 1));
}

// For each head h: dst[r, h, dst_offset ..] = W_h . src[rows[r], h, src_offset .. + K] (gathered into
// one [rows, K] matrix per head so that each head is one matmul).
void per_head_linear(const MlaStep& st, std::span<const int64_t> rows, const float* src, int64_t src_head_stride,
                     int64_t src_offset, int64_t K, int64_t num_heads, auto&& weight_of, float* dst,
                     int64_t dst_head_stride, int64_t dst_offset, int64_t N, MlaWorkspace& ws) {
  const auto M = static_cast<int64_t>(rows.size());
  grow(ws.head_x, M * K);
  grow(ws.head_y, M * N);
  for (int64_t h = 0; h < num_heads; ++h) {
    for (int64_t r = 0; r < M; ++r)
      std::copy_n(src + (rows[static_cast<size_t>(r)] * num_heads + h) * src_head_stride + src_offset, K,
                  ws.head_x.data() + r * K);
    run_linear(st, std::span<const float>(ws.head_x).first(static_cast<size_t>(M * K)), M, weight_of(h),
               std::span(ws.head_y).first(static_cast<size_t>(M * N)));
    for (int64_t r = 0; r < M; ++r)
      std::copy_n(ws.head_y.data() + r * N, N,
                  dst + (rows[static_cast<size_t>(r)] * num_heads + h) * dst_head_stride + dst_offset);
  }
}

void attend(const MlaStep& st, std::span<const float> q, const KvLayerView& kv, std::span<const AttentionSequence> seqs,
            float scale, int64_t num_heads, std::span<float> out, MlaWorkspace& ws) {
  const AttentionParams params{num_heads, scale, 0};
  const int64_t need = paged_attention_scratch_floats(seqs, params, kv.head_dim);
  if (static_cast<int64_t>(ws.scores.size()) < need)
    ws.scores.resize(static_cast<size_t>(std::max<int64_t>(need, 2 * static_cast<int64_t>(ws.scores.size()))));
  paged_attention(q, kv, seqs, params, ws.scores, out, st.team, st.isa, st.kernel_scratch);
}

// Absorbed: heads_out rows of `seqs` from q via the latent.
void absorbed(const ModelConfig& c, const MlaLayerWeights& w, const KvLayerView& cache, const MlaStep& st,
              std::span<const AttentionSequence> seqs, MlaWorkspace& ws, int64_t T) {
  const MlaConfig& m = c.mla;
  const int64_t nh = c.num_heads, qk = m.qk_head_dim(), nope = m.qk_nope_head_dim, rope = m.qk_rope_head_dim;
  const int64_t R = m.kv_lora_rank, L = m.latent_dim();
  ws.rows.clear();
  for (const AttentionSequence& s : seqs)
    for (int64_t r = s.token_offset; r < s.token_offset + s.num_tokens; ++r) ws.rows.push_back(r);
  grow(ws.q_abs, T * nh * L);
  grow(ws.latent_out, T * nh * L);
  {
    trace::Scope t("mla_absorb_q");
    per_head_linear(st, ws.rows, ws.q.data(), qk, 0, nope, nh, [&](int64_t h) { return w.w_uk_t_view(h, m); },
                    ws.q_abs.data(), L, 0, R, ws);
    for (int64_t r : ws.rows)
      for (int64_t h = 0; h < nh; ++h)
        std::copy_n(ws.q.data() + (r * nh + h) * qk + nope, rope, ws.q_abs.data() + (r * nh + h) * L + R);
  }
  {
    trace::Scope t("mla_latent_attention");
    attend(st, ws.q_abs, cache, seqs, m.softmax_scale, nh, ws.latent_out, ws);
  }
  trace::Scope t("mla_absorb_v");
  per_head_linear(st, ws.rows, ws.latent_out.data(), L, 0, R, nh, [&](int64_t h) { return w.w_uv_view(h, m); },
                  ws.heads_out.data(), m.v_head_dim, 0, m.v_head_dim, ws);
}

// Materialised: one sequence's K/V rebuilt per head from its cached latent, then MHA.
void materialised(const ModelConfig& c, const MlaLayerWeights& w, const KvLayerView& cache, const MlaStep& st,
                  const AttentionSequence& s, MlaWorkspace& ws) {
  const MlaConfig& m = c.mla;
  const int64_t nh = c.num_heads, qk = m.qk_head_dim(), nope = m.qk_nope_head_dim, rope = m.qk_rope_head_dim;
  const int64_t R = m.kv_lora_rank, L = m.latent_dim(), vd = m.v_head_dim, n = s.context_length;
  trace::Scope t("mla_materialise");
  grow(ws.ctx_latent, n * L);
  grow(ws.ctx_c, n * R);
  grow(ws.ctx_kv, n * nh * (nope + vd));
  grow(ws.ctx_k, n * nh * qk);
  grow(ws.ctx_v, n * nh * qk);
  const int64_t esize = kernels::kv_element_bytes(cache.dtype);
  for (int64_t p = 0; p < n; ++p) {
    const int64_t slot = cache.slot(s.block_table, p);
    const float scale = cache.key_scales != nullptr ? cache.key_scales[slot] : 1.0f;
    kernels::kv_decode_row(cache.dtype, static_cast<const char*>(cache.keys) + slot * L * esize, scale, L,
                           ws.ctx_latent.data() + p * L);
    std::copy_n(ws.ctx_latent.data() + p * L, R, ws.ctx_c.data() + p * R);
  }
  run_linear(st, std::span<const float>(ws.ctx_c).first(static_cast<size_t>(n * R)), n, w.kv_b,
             std::span(ws.ctx_kv).first(static_cast<size_t>(n * nh * (nope + vd))));
  for (int64_t p = 0; p < n; ++p)
    for (int64_t h = 0; h < nh; ++h) {
      const float* kv = ws.ctx_kv.data() + (p * nh + h) * (nope + vd);
      float* k = ws.ctx_k.data() + (p * nh + h) * qk;
      float* v = ws.ctx_v.data() + (p * nh + h) * qk;
      std::copy_n(kv, nope, k);
      std::copy_n(ws.ctx_latent.data() + p * L + R, rope, k + nope);
      std::copy_n(kv + nope, vd, v);
      std::fill(v + vd, v + qk, 0.0f);  // values padded to the key width: the kernels take one head_dim
    }
  // The rebuilt context as one contiguous block of a temporary f32 cache.
  const KvLayerView mha{ws.ctx_k.data(), ws.ctx_v.data(), nullptr, nullptr, 1, n, nh, qk, KvDtype::kF32, false};
  static constexpr int32_t kOneBlock[1] = {0};
  AttentionSequence one = s;
  one.block_table = kOneBlock;
  attend(st, ws.q, mha, std::span(&one, 1), m.softmax_scale, nh, ws.mha_out, ws);
  for (int64_t r = s.token_offset; r < s.token_offset + s.num_tokens; ++r)
    for (int64_t h = 0; h < nh; ++h)
      std::copy_n(ws.mha_out.data() + (r * nh + h) * qk, vd, ws.heads_out.data() + (r * nh + h) * vd);
}

}  // namespace

void mla_attention(const ModelConfig& c, const MlaLayerWeights& w, std::span<const float> x, int64_t T,
                   const KvLayerView& cache, const MlaStep& st, MlaWorkspace& ws, std::span<float> out) {
  const MlaConfig& m = c.mla;
  const int64_t nh = c.num_heads, qk = m.qk_head_dim(), nope = m.qk_nope_head_dim, rope = m.qk_rope_head_dim;
  const int64_t R = m.kv_lora_rank, L = m.latent_dim();
  assert(cache.latent && cache.head_dim == L && cache.num_kv_heads == 1);
  grow(ws.q, T * nh * qk);
  grow(ws.latent, T * L);
  grow(ws.heads_out, T * nh * m.v_head_dim);
  grow(ws.mha_out, T * nh * qk);
  const auto q = std::span(ws.q).first(static_cast<size_t>(T * nh * qk));
  const auto latent = std::span(ws.latent).first(static_cast<size_t>(T * L));
  {
    trace::Scope t("mla_qkv_a");
    if (m.q_lora_rank > 0) {
      grow(ws.q_a, T * m.q_lora_rank);
      const auto q_a = std::span(ws.q_a).first(static_cast<size_t>(T * m.q_lora_rank));
      const LinearOutput down[] = {{&w.q_a, {}, q_a, {}}, {&w.kv_a, {}, latent, {}}};
      run_linears(st, x, T, down);
      rms_norm(q_a, T, m.q_lora_rank, w.q_a_norm, c.rms_norm_eps, q_a, st.isa);
      run_linear(st, q_a, T, w.q_b, q);
    } else {
      const LinearOutput down[] = {{&w.q, {}, q, {}}, {&w.kv_a, {}, latent, {}}};
      run_linears(st, x, T, down);
    }
  }
  // Per row: c_kv's RMSNorm, RoPE on k_pe and on every head's q_pe, then [c_kv | k_pe] into the cache.
  trace::Scope t_rope("mla_rope_latent_write");
  const auto half = static_cast<size_t>(rope / 2);
  parallel_rows(st.team, T, nh * qk + L, [&](int64_t t0, int64_t t1) {
    for (const AttentionSequence& sl : st.slices) {
      const int64_t r0 = std::max(t0, sl.token_offset), r1 = std::min(t1, sl.token_offset + sl.num_tokens);
      for (int64_t r = r0; r < r1; ++r) {
        float* row = latent.data() + r * L;
        rms_norm(std::span<const float>(row, static_cast<size_t>(R)), 1, R, w.kv_a_norm, c.rms_norm_eps,
                 std::span<float>(row, static_cast<size_t>(R)), st.isa);
        const float* cos = st.rope_cos.data() + static_cast<size_t>(r) * half;
        const float* sin = st.rope_sin.data() + static_cast<size_t>(r) * half;
        rotate_heads(row + R, 1, rope, cos, sin, half, c.rope.layout);
        rotate_heads(q.data() + r * nh * qk + nope, nh, qk, cos, sin, half, c.rope.layout);
        const int64_t slot = sl.context_length - sl.num_tokens + (r - sl.token_offset);
        write_latent_slot(cache, cache.slot(sl.block_table, slot), row);
      }
    }
  });
  t_rope.end();
  ws.absorbed.clear();
  ws.materialised.clear();
  for (const AttentionSequence& sl : st.slices) {
    if (sl.num_tokens == 0) continue;
    const bool materialise = sl.tree == nullptr && (st.mode == MlaMode::kMaterialised ||
                                                    (st.mode == MlaMode::kAuto && sl.num_tokens >= kMlaMaterialiseMinTokens));
    (materialise ? ws.materialised : ws.absorbed).push_back(sl);
  }
  if (!ws.absorbed.empty()) absorbed(c, w, cache, st, ws.absorbed, ws, T);
  for (const AttentionSequence& sl : ws.materialised) materialised(c, w, cache, st, sl, ws);
  trace::Scope t_o("mla_o_proj");
  run_linear(st, std::span<const float>(ws.heads_out).first(static_cast<size_t>(T * nh * m.v_head_dim)), T, w.o, out);
}

}  // namespace lemma::layers
