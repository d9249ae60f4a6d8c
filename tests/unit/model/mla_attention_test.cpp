// layers::mla_attention (G28) against a plain float64 reference of DeepSeek's MLA (per-head K/V
// materialised, causal softmax), on odd shapes (3 heads, kv_lora_rank 18, nope 6, rope 4, v 10;
// with and without q_lora), a batch of a decoding sequence (5 cached + 3 new) and a prefill (7 new)
// over scattered block tables, every available ISA, absorbed and materialised, f32 and bf16 caches;
// and the cache holds exactly [RMSNorm(c_kv) | rotated k_pe] per token.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "lemma/kernels/attention/kv_quant.h"
#include "lemma/kernels/isa.h"
#include "lemma/model/layers/mla_attention.h"
#include "lemma/model/layers/rope.h"

namespace lemma::layers {
namespace {

std::vector<float> random_values(size_t n, std::mt19937& rng, float stddev = 0.3f) {
  std::normal_distribution<float> normal(0.0f, stddev);
  std::vector<float> v(n);
  for (float& x : v) x = normal(rng);
  return v;
}

struct Fixture {
  ModelConfig c;
  std::vector<std::vector<float>> storage;  // backs the weight views
  MlaLayerWeights w;

  TensorView matrix(int64_t rows, int64_t cols, std::mt19937& rng) {
    storage.push_back(random_values(static_cast<size_t>(rows * cols), rng));
    return TensorView{storage.back().data(), DType::kF32, Shape{rows, cols}};
  }
  const float* data(const TensorView& t) const { return t.as<float>(); }

  Fixture(int64_t q_lora, uint32_t seed) {
    std::mt19937 rng(seed);
    c.arch = "test";
    c.hidden_size = 20;
    c.num_heads = 3;
    c.num_kv_heads = 3;
    c.rms_norm_eps = 1e-6f;
    MlaConfig& m = c.mla;
    m.q_lora_rank = q_lora;
    m.kv_lora_rank = 18;
    m.qk_nope_head_dim = 6;
    m.qk_rope_head_dim = 4;
    m.v_head_dim = 10;
    m.softmax_scale = 0.37f;
    c.head_dim = m.qk_head_dim();
    c.rope.rotary_dim = m.qk_rope_head_dim;
    c.rope.layout = RopeLayout::kInterleaved;
    const int64_t H = c.hidden_size, nh = c.num_heads, qk = m.qk_head_dim(), R = m.kv_lora_rank;
    if (q_lora > 0) {
      w.q_a = matrix(q_lora, H, rng);
      w.q_a_norm = random_values(static_cast<size_t>(q_lora), rng);
      for (float& x : w.q_a_norm) x += 1.0f;
      w.q_b = matrix(nh * qk, q_lora, rng);
    } else {
      w.q = matrix(nh * qk, H, rng);
    }
    w.kv_a = matrix(m.latent_dim(), H, rng);
    w.kv_a_norm = random_values(static_cast<size_t>(R), rng);
    for (float& x : w.kv_a_norm) x += 1.0f;
    w.kv_b = matrix(nh * (m.qk_nope_head_dim + m.v_head_dim), R, rng);
    w.o = matrix(H, nh * m.v_head_dim, rng);
    const int64_t nope = m.qk_nope_head_dim, vd = m.v_head_dim;
    w.w_uk_t.resize(static_cast<size_t>(nh * R * nope));
    w.w_uv.resize(static_cast<size_t>(nh * vd * R));
    const float* kvb = data(w.kv_b);
    for (int64_t h = 0; h < nh; ++h)
      for (int64_t r = 0; r < R; ++r) {
        for (int64_t i = 0; i < nope; ++i)
          w.w_uk_t[static_cast<size_t>((h * R + r) * nope + i)] = kvb[(h * (nope + vd) + i) * R + r];
        for (int64_t i = 0; i < vd; ++i)
          w.w_uv[static_cast<size_t>((h * vd + i) * R + r)] = kvb[(h * (nope + vd) + nope + i) * R + r];
      }
  }
};

using Mat = std::vector<double>;

Mat matmul_t(const Mat& x, int64_t M, int64_t K, const float* w, int64_t N) {  // x [M,K] . w[N,K]^T
  Mat y(static_cast<size_t>(M * N), 0.0);
  for (int64_t i = 0; i < M; ++i)
    for (int64_t n = 0; n < N; ++n) {
      double s = 0.0;
      for (int64_t k = 0; k < K; ++k) s += x[static_cast<size_t>(i * K + k)] * w[n * K + k];
      y[static_cast<size_t>(i * N + n)] = s;
    }
  return y;
}

void rms(double* x, int64_t n, const std::vector<float>& w, double eps) {
  double ss = 0.0;
  for (int64_t i = 0; i < n; ++i) ss += x[i] * x[i];
  const double inv = 1.0 / std::sqrt(ss / static_cast<double>(n) + eps);
  for (int64_t i = 0; i < n; ++i) x[i] = x[i] * inv * w[static_cast<size_t>(i)];
}

// Adjacent-pair RoPE of d values at position p with inv_freq.
void rope(double* x, int64_t d, int64_t p, const std::vector<double>& inv) {
  for (int64_t i = 0; i < d / 2; ++i) {
    const double a = static_cast<double>(p) * inv[static_cast<size_t>(i)], c = std::cos(a), s = std::sin(a);
    const double x0 = x[2 * i], x1 = x[2 * i + 1];
    x[2 * i] = x0 * c - x1 * s;
    x[2 * i + 1] = x1 * c + x0 * s;
  }
}

// The layer output [T, hidden] of one sequence's tokens x [T, hidden] at positions 0..T-1.
Mat reference(const Fixture& f, const Mat& x, int64_t T, const std::vector<double>& inv) {
  const ModelConfig& c = f.c;
  const MlaConfig& m = c.mla;
  const int64_t H = c.hidden_size, nh = c.num_heads, qk = m.qk_head_dim(), nope = m.qk_nope_head_dim,
                rp = m.qk_rope_head_dim, R = m.kv_lora_rank, L = m.latent_dim(), vd = m.v_head_dim;
  Mat q;
  if (m.q_lora_rank > 0) {
    Mat qa = matmul_t(x, T, H, f.data(f.w.q_a), m.q_lora_rank);
    for (int64_t t = 0; t < T; ++t) rms(qa.data() + t * m.q_lora_rank, m.q_lora_rank, f.w.q_a_norm, c.rms_norm_eps);
    q = matmul_t(qa, T, m.q_lora_rank, f.data(f.w.q_b), nh * qk);
  } else {
    q = matmul_t(x, T, H, f.data(f.w.q), nh * qk);
  }
  Mat lat = matmul_t(x, T, H, f.data(f.w.kv_a), L);
  Mat cc(static_cast<size_t>(T * R));
  for (int64_t t = 0; t < T; ++t) {
    rms(lat.data() + t * L, R, f.w.kv_a_norm, c.rms_norm_eps);
    rope(lat.data() + t * L + R, rp, t, inv);
    for (int64_t h = 0; h < nh; ++h) rope(q.data() + (t * nh + h) * qk + nope, rp, t, inv);
    std::copy_n(lat.data() + t * L, R, cc.data() + t * R);
  }
  const Mat kv = matmul_t(cc, T, R, f.data(f.w.kv_b), nh * (nope + vd));
  Mat heads(static_cast<size_t>(T * nh * vd), 0.0);
  for (int64_t h = 0; h < nh; ++h)
    for (int64_t t = 0; t < T; ++t) {
      std::vector<double> s(static_cast<size_t>(t + 1));
      double mx = -1e300;
      for (int64_t j = 0; j <= t; ++j) {
        double d = 0.0;
        for (int64_t i = 0; i < nope; ++i) d += q[static_cast<size_t>((t * nh + h) * qk + i)] * kv[static_cast<size_t>((j * nh + h) * (nope + vd) + i)];
        for (int64_t i = 0; i < rp; ++i) d += q[static_cast<size_t>((t * nh + h) * qk + nope + i)] * lat[static_cast<size_t>(j * L + R + i)];
        s[static_cast<size_t>(j)] = d * m.softmax_scale;
        mx = std::max(mx, s[static_cast<size_t>(j)]);
      }
      double sum = 0.0;
      for (double& v : s) sum += (v = std::exp(v - mx));
      for (int64_t j = 0; j <= t; ++j)
        for (int64_t i = 0; i < vd; ++i)
          heads[static_cast<size_t>((t * nh + h) * vd + i)] +=
              s[static_cast<size_t>(j)] / sum * kv[static_cast<size_t>((j * nh + h) * (nope + vd) + nope + i)];
    }
  return matmul_t(heads, T, nh * vd, f.data(f.w.o), H);
}

struct Seq {
  int64_t cached, fresh;
  std::vector<int32_t> table;
};

class MlaAttention : public ::testing::TestWithParam<std::tuple<int64_t, KvDtype>> {};

TEST_P(MlaAttention, MatchesPlainReferenceOnEveryIsaAndPath) {
  const auto [q_lora, dtype] = GetParam();
  const Fixture f(q_lora, 7);
  const ModelConfig& c = f.c;
  const int64_t H = c.hidden_size, L = c.mla.latent_dim();
  RopeFrequencies freqs;
  for (int64_t i = 0; i < c.mla.qk_rope_head_dim / 2; ++i)
    freqs.inv_freq.push_back(1.0 / std::pow(10000.0, 2.0 * static_cast<double>(i) / static_cast<double>(c.mla.qk_rope_head_dim)));
  constexpr int64_t kBlock = 4;
  // Sequence 0 decodes 3 tokens after 5 cached; sequence 1 prefills 7; scattered tables.
  const std::vector<Seq> seqs = {{5, 3, {6, 1}}, {0, 7, {3, 0}}};
  std::mt19937 rng(11);
  std::vector<Mat> xs;
  for (const Seq& s : seqs) {
    const auto v = random_values(static_cast<size_t>((s.cached + s.fresh) * H), rng, 1.0f);
    xs.emplace_back(v.begin(), v.end());
  }
  const double tolerance = dtype == KvDtype::kF32 ? 2e-4 : 3e-2;
  for (const kernels::Isa isa : kernels::available_isas())
    for (const MlaMode mode : {MlaMode::kAbsorbed, MlaMode::kMaterialised}) {
      KvCache cache(1, 8, kBlock, 1, L, dtype, true);
      const KvLayerView view = cache.layer(0);
      MlaWorkspace ws;
      LinearScratch activations;
      // Step 1: sequence 0's cached prefix; step 2: both sequences' new tokens in one batch.
      for (int step = 0; step < 2; ++step) {
        std::vector<AttentionSequence> slices;
        std::vector<float> x, cos, sin;
        std::vector<int64_t> positions;
        int64_t rows = 0;
        for (size_t s = 0; s < seqs.size(); ++s) {
          const int64_t first = step == 0 ? 0 : seqs[s].cached, n = step == 0 ? seqs[s].cached : seqs[s].fresh;
          if (n == 0) continue;
          slices.push_back({rows, n, first + n, seqs[s].table});
          for (int64_t t = first; t < first + n; ++t, ++rows) {
            positions.push_back(t);
            for (int64_t i = 0; i < H; ++i) x.push_back(static_cast<float>(xs[s][static_cast<size_t>(t * H + i)]));
          }
        }
        const size_t half = freqs.inv_freq.size();
        cos.resize(positions.size() * half);
        sin.resize(positions.size() * half);
        rope_angles(positions, freqs, cos, sin);
        MlaStep st;
        st.slices = slices;
        st.rope_cos = cos;
        st.rope_sin = sin;
        st.mode = mode;
        st.isa = isa;
        st.options = {isa, std::nullopt, kernels::ActivationPolicy::kAuto};
        st.activations = &activations;
        std::vector<float> out(static_cast<size_t>(rows * H));
        mla_attention(c, f.w, x, rows, view, st, ws, out);
        if (step == 0) continue;
        for (size_t s = 0; s < seqs.size(); ++s) {
          const Seq& q = seqs[s];
          const Mat want = reference(f, xs[s], q.cached + q.fresh, freqs.inv_freq);
          const int64_t row0 = slices[s].token_offset;
          double max_abs = 0.0, diff = 0.0;
          for (int64_t t = 0; t < q.fresh; ++t)
            for (int64_t i = 0; i < H; ++i) {
              const double w = want[static_cast<size_t>((q.cached + t) * H + i)];
              max_abs = std::max(max_abs, std::abs(w));
              diff = std::max(diff, std::abs(w - out[static_cast<size_t>((row0 + t) * H + i)]));
            }
          EXPECT_LE(diff, tolerance * max_abs) << kernels::isa_name(isa) << " mode " << static_cast<int>(mode)
                                               << " sequence " << s << " " << kernels::kv_dtype_name(dtype);
        }
        // The cache holds the latent: sequence 1's row at position 2 is [RMSNorm(c_kv) | rotated k_pe].
        if (dtype == KvDtype::kF32 && mode == MlaMode::kAbsorbed) {
          Mat lat = matmul_t(Mat(xs[1].begin() + 2 * H, xs[1].begin() + 3 * H), 1, H, f.data(f.w.kv_a), L);
          rms(lat.data(), c.mla.kv_lora_rank, f.w.kv_a_norm, c.rms_norm_eps);
          rope(lat.data() + c.mla.kv_lora_rank, c.mla.qk_rope_head_dim, 2, freqs.inv_freq);
          const float* row = static_cast<const float*>(view.keys) + view.slot(seqs[1].table, 2) * L;
          for (int64_t i = 0; i < L; ++i) EXPECT_NEAR(row[i], lat[static_cast<size_t>(i)], 1e-4) << i;
        }
      }
    }
}

INSTANTIATE_TEST_SUITE_P(Shapes, MlaAttention,
                         ::testing::Combine(::testing::Values(int64_t{0}, int64_t{12}),
                                            ::testing::Values(KvDtype::kF32, KvDtype::kBf16)));

}  // namespace
}  // namespace lemma::layers
