#include "random_model.h"

#include <cmath>

#include "lemma/model/weight_names.h"

namespace lemma::testing {

ModelConfig small_config() {
  ModelConfig c;
  c.arch = "llama";
  c.vocab_size = 40;
  c.hidden_size = 32;
  c.intermediate_size = 48;
  c.num_layers = 2;
  c.num_heads = 4;
  c.num_kv_heads = 2;
  c.head_dim = 8;
  c.max_position_embeddings = 64;
  c.rms_norm_eps = 1e-5f;
  c.rope.theta = 10000.0;
  c.rope.rotary_dim = 8;
  c.rope.layout = RopeLayout::kHalfSplit;
  c.rope.max_position_embeddings = 64;
  return c;
}

RandomModel make_random_model(const ModelConfig& c, uint32_t seed) {
  RandomModel m;
  m.config = c;
  m.tensors = std::make_shared<std::map<std::string, std::vector<float>>>();
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 0.3f);
  auto add = [&](WeightRole role, int64_t layer, Shape shape, bool is_norm) {
    const std::string name = weight_name(WeightFormat::kHf, role, layer);
    std::vector<float> v(static_cast<size_t>(shape.elements()));
    for (float& x : v) x = is_norm ? 1.0f + 0.3f * normal(rng) : normal(rng);
    (*m.tensors)[name] = std::move(v);
    m.shapes[name] = shape;
  };
  const int64_t h = c.hidden_size;
  add(WeightRole::kTokenEmbedding, 0, {c.vocab_size, h}, false);
  add(WeightRole::kFinalNorm, 0, {h}, true);
  if (!c.tie_word_embeddings) add(WeightRole::kLmHead, 0, {c.vocab_size, h}, false);
  for (int64_t l = 0; l < c.num_layers; ++l) {
    add(WeightRole::kAttnNorm, l, {h}, true);
    add(WeightRole::kQ, l, {c.q_dim(), h}, false);
    add(WeightRole::kK, l, {c.kv_dim(), h}, false);
    add(WeightRole::kV, l, {c.kv_dim(), h}, false);
    add(WeightRole::kO, l, {h, c.q_dim()}, false);
    if (c.qkv_bias) {
      add(WeightRole::kQBias, l, {c.q_dim()}, false);
      add(WeightRole::kKBias, l, {c.kv_dim()}, false);
      add(WeightRole::kVBias, l, {c.kv_dim()}, false);
    }
    if (c.qk_norm) {
      add(WeightRole::kQNorm, l, {c.head_dim}, true);
      add(WeightRole::kKNorm, l, {c.head_dim}, true);
    }
    add(WeightRole::kFfnNorm, l, {h}, true);
    add(WeightRole::kGate, l, {c.intermediate_size, h}, false);
    add(WeightRole::kUp, l, {c.intermediate_size, h}, false);
    add(WeightRole::kDown, l, {h, c.intermediate_size}, false);
  }
  return m;
}

Model RandomModel::build(const RuntimeOptions& runtime) const {
  auto t = tensors;
  auto s = shapes;
  TensorLookup lookup = [t, s](const std::string& name) -> std::optional<TensorView> {
    auto it = t->find(name);
    if (it == t->end()) return std::nullopt;
    return TensorView{it->second.data(), DType::kF32, s.at(name)};
  };
  return Model::from_tensors(config, WeightFormat::kHf, lookup, tensors, false, runtime);
}

namespace {

using Mat = std::vector<double>;

// y[M,N] = x[M,K] W[N,K]^T
Mat matmul(const Mat& x, int64_t M, int64_t K, const std::vector<float>& w, int64_t N) {
  Mat y(static_cast<size_t>(M * N), 0.0);
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n) {
      double s = 0;
      for (int64_t k = 0; k < K; ++k) s += x[static_cast<size_t>(m * K + k)] * w[static_cast<size_t>(n * K + k)];
      y[static_cast<size_t>(m * N + n)] = s;
    }
  return y;
}

void rms(Mat& x, int64_t rows, int64_t dim, const std::vector<float>& w, double eps) {
  for (int64_t r = 0; r < rows; ++r) {
    double ss = 0;
    for (int64_t i = 0; i < dim; ++i) ss += x[static_cast<size_t>(r * dim + i)] * x[static_cast<size_t>(r * dim + i)];
    const double inv = 1.0 / std::sqrt(ss / static_cast<double>(dim) + eps);
    for (int64_t i = 0; i < dim; ++i) x[static_cast<size_t>(r * dim + i)] *= inv * w[static_cast<size_t>(i)];
  }
}

// HF default / linear / dynamic inv_freq (transformers' _compute_*_rope_parameters).
std::vector<double> inv_freq(const ModelConfig& c, int64_t seq_len) {
  const int64_t d = c.head_dim;
  double base = c.rope.theta;
  const auto& s = c.rope.scaling;
  if (s.type == RopeScalingType::kDynamicNtk) {
    const double mp = static_cast<double>(c.max_position_embeddings);
    const double len = std::max<double>(static_cast<double>(seq_len), mp);
    base *= std::pow(s.factor * len / mp - (s.factor - 1), static_cast<double>(d) / static_cast<double>(d - 2));
  }
  std::vector<double> inv(static_cast<size_t>(d / 2));
  for (int64_t i = 0; i < d / 2; ++i) {
    inv[static_cast<size_t>(i)] = 1.0 / std::pow(base, static_cast<double>(2 * i) / static_cast<double>(d));
    if (s.type == RopeScalingType::kLinear) inv[static_cast<size_t>(i)] /= s.factor;
  }
  return inv;
}

void rotate_half_rope(Mat& x, int64_t T, int64_t heads, int64_t d, const std::vector<double>& inv) {
  for (int64_t t = 0; t < T; ++t)
    for (int64_t h = 0; h < heads; ++h) {
      double* v = x.data() + (t * heads + h) * d;
      std::vector<double> out(static_cast<size_t>(d));
      for (int64_t i = 0; i < d; ++i) {
        const double angle = static_cast<double>(t) * inv[static_cast<size_t>(i % (d / 2))];
        const double rotated = i < d / 2 ? -v[i + d / 2] : v[i - d / 2];
        out[static_cast<size_t>(i)] = v[i] * std::cos(angle) + rotated * std::sin(angle);
      }
      std::copy(out.begin(), out.end(), v);
    }
}

}  // namespace

std::vector<double> reference_forward(const RandomModel& m, const std::vector<int32_t>& tokens) {
  const ModelConfig& c = m.config;
  const int64_t T = static_cast<int64_t>(tokens.size()), H = c.hidden_size, d = c.head_dim;
  const int64_t nh = c.num_heads, nkv = c.num_kv_heads, I = c.intermediate_size;
  const double eps = c.rms_norm_eps;
  auto W = [&](WeightRole role, int64_t layer) -> const std::vector<float>& {
    return m.at(weight_name(WeightFormat::kHf, role, layer));
  };
  Mat x(static_cast<size_t>(T * H));
  for (int64_t t = 0; t < T; ++t)
    for (int64_t i = 0; i < H; ++i)
      x[static_cast<size_t>(t * H + i)] = W(WeightRole::kTokenEmbedding, 0)[static_cast<size_t>(tokens[t] * H + i)];
  const auto inv = inv_freq(c, T);
  for (int64_t l = 0; l < c.num_layers; ++l) {
    Mat h = x;
    rms(h, T, H, W(WeightRole::kAttnNorm, l), eps);
    Mat q = matmul(h, T, H, W(WeightRole::kQ, l), nh * d);
    Mat k = matmul(h, T, H, W(WeightRole::kK, l), nkv * d);
    Mat v = matmul(h, T, H, W(WeightRole::kV, l), nkv * d);
    if (c.qkv_bias)
      for (int64_t t = 0; t < T; ++t) {
        for (int64_t i = 0; i < nh * d; ++i) q[static_cast<size_t>(t * nh * d + i)] += W(WeightRole::kQBias, l)[i];
        for (int64_t i = 0; i < nkv * d; ++i) {
          k[static_cast<size_t>(t * nkv * d + i)] += W(WeightRole::kKBias, l)[i];
          v[static_cast<size_t>(t * nkv * d + i)] += W(WeightRole::kVBias, l)[i];
        }
      }
    if (c.qk_norm) {
      rms(q, T * nh, d, W(WeightRole::kQNorm, l), eps);
      rms(k, T * nkv, d, W(WeightRole::kKNorm, l), eps);
    }
    rotate_half_rope(q, T, nh, d, inv);
    rotate_half_rope(k, T, nkv, d, inv);
    Mat attn(static_cast<size_t>(T * nh * d), 0.0);
    const int64_t window = c.layer_sliding_window(l);
    for (int64_t t = 0; t < T; ++t)
      for (int64_t hh = 0; hh < nh; ++hh) {
        const int64_t g = hh / (nh / nkv);
        std::vector<double> p(static_cast<size_t>(T), 0.0);
        double mx = -1e300, sum = 0;
        for (int64_t j = 0; j <= t; ++j) {
          if (window > 0 && t - j >= window) continue;
          double s = 0;
          for (int64_t i = 0; i < d; ++i) s += q[static_cast<size_t>((t * nh + hh) * d + i)] * k[static_cast<size_t>((j * nkv + g) * d + i)];
          p[static_cast<size_t>(j)] = s / std::sqrt(static_cast<double>(d));
          mx = std::max(mx, p[static_cast<size_t>(j)]);
        }
        for (int64_t j = 0; j <= t; ++j) {
          if (window > 0 && t - j >= window) { p[static_cast<size_t>(j)] = 0; continue; }
          p[static_cast<size_t>(j)] = std::exp(p[static_cast<size_t>(j)] - mx);
          sum += p[static_cast<size_t>(j)];
        }
        for (int64_t j = 0; j <= t; ++j)
          for (int64_t i = 0; i < d; ++i)
            attn[static_cast<size_t>((t * nh + hh) * d + i)] += p[static_cast<size_t>(j)] / sum * v[static_cast<size_t>((j * nkv + g) * d + i)];
      }
    Mat o = matmul(attn, T, nh * d, W(WeightRole::kO, l), H);
    for (size_t i = 0; i < x.size(); ++i) x[i] += o[i];
    h = x;
    rms(h, T, H, W(WeightRole::kFfnNorm, l), eps);
    Mat gt = matmul(h, T, H, W(WeightRole::kGate, l), I);
    Mat up = matmul(h, T, H, W(WeightRole::kUp, l), I);
    for (size_t i = 0; i < gt.size(); ++i) gt[i] = gt[i] / (1 + std::exp(-gt[i])) * up[i];
    Mat down = matmul(gt, T, I, W(WeightRole::kDown, l), H);
    for (size_t i = 0; i < x.size(); ++i) x[i] += down[i];
  }
  rms(x, T, H, W(WeightRole::kFinalNorm, 0), eps);
  const auto& head = c.tie_word_embeddings ? W(WeightRole::kTokenEmbedding, 0) : W(WeightRole::kLmHead, 0);
  return matmul(x, T, H, head, c.vocab_size);
}

RandomModel make_random_moe_model(uint32_t seed) {
  RandomModel m = make_random_model(small_config(), seed);
  MoeConfig& moe = m.config.moe;
  moe.num_experts = 4;
  moe.expert_intermediate_size = 8;
  moe.routing.top_k = 2;
  moe.routing.normalize_top_k = true;
  moe.naming = MoeTensorNaming::kMixtral;
  std::mt19937 rng(seed + 1);
  std::normal_distribution<float> normal(0.0f, 0.3f);
  const int64_t h = m.config.hidden_size, E = moe.num_experts, W = moe.expert_intermediate_size;
  const auto add = [&](const std::string& name, int64_t rows, int64_t cols) {
    std::vector<float> v(static_cast<size_t>(rows * cols));
    for (float& x : v) x = normal(rng);
    (*m.tensors)[name] = std::move(v);
    m.shapes[name] = Shape{rows, cols};
  };
  for (int64_t l = 0; l < m.config.num_layers; ++l) {
    add(moe_tensor_name(WeightFormat::kHf, moe.naming, MoeTensor::kRouter, l), E, h);
    for (int64_t e = 0; e < E; ++e) {
      add(moe_tensor_name(WeightFormat::kHf, moe.naming, MoeTensor::kExpertGate, l, e), W, h);
      add(moe_tensor_name(WeightFormat::kHf, moe.naming, MoeTensor::kExpertUp, l, e), W, h);
      add(moe_tensor_name(WeightFormat::kHf, moe.naming, MoeTensor::kExpertDown, l, e), h, W);
    }
  }
  return m;
}

}  // namespace lemma::testing
