// SmoothQuant (quant/smooth_quant.h): the factors follow s_j = max|X_j|^alpha / max|W_j|^(1-alpha) on
// hand-computed cases, and folding them (norm weight / s, matrix columns * s) leaves every layer's
// f32 output unchanged before any int8 rounding, while it balances the activation and weight ranges.
#include "lemma/quant/smooth_quant.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <memory>

#include "lemma/base/error.h"
#include "lemma/model/linear_inputs.h"
#include "lemma/model/sequence_logits.h"
#include "lemma/model/weight_names.h"
#include "unit/model/random_model.h"

namespace lemma::quant {
namespace {

// q = [[1, -3], [-2, 0.5]] and k = [[0.5, -4]] read one norm's output: max|W_:,0| = 2, max|W_:,1| = 4.
TEST(SmoothQuant, ColumnAbsmaxOverEveryMatrixOfANorm) {
  const std::vector<float> q = {1.0f, -3.0f, -2.0f, 0.5f};
  const std::vector<float> k = {0.5f, -4.0f};
  std::vector<float> absmax(2, 0.0f);
  accumulate_column_absmax(q, 2, 2, absmax);
  EXPECT_EQ(absmax, (std::vector<float>{2.0f, 3.0f}));
  accumulate_column_absmax(k, 1, 2, absmax);
  EXPECT_EQ(absmax, (std::vector<float>{2.0f, 4.0f}));
  EXPECT_THROW(accumulate_column_absmax(k, 2, 2, absmax), InvalidArgument);
}

// By hand: alpha 0.5: sqrt(4)/sqrt(1) = 2, sqrt(1)/sqrt(4) = 0.5, sqrt(9)/sqrt(0.25) = 6, sqrt(8)/sqrt(2) = 2.
// alpha 0.75: 16^0.75 / 1^0.25 = 8, 1^0.75 / 16^0.25 = 0.5, 81^0.75 / (1/16)^0.25 = 27 / 0.5 = 54.
// alpha 0: s = 1 / max|W|; alpha 1: s = max|X|.
TEST(SmoothQuant, FactorsFollowTheFormula) {
  const auto expect_factors = [](std::vector<float> x, std::vector<float> w, float alpha, std::vector<float> want) {
    const auto s = smoothing_factors(x, w, alpha);
    ASSERT_EQ(s.size(), want.size());
    for (size_t j = 0; j < s.size(); ++j) EXPECT_NEAR(s[j], want[j], 1e-6f * want[j]) << "alpha " << alpha << " j " << j;
  };
  expect_factors({4.0f, 1.0f, 9.0f, 8.0f}, {1.0f, 4.0f, 0.25f, 2.0f}, 0.5f, {2.0f, 0.5f, 6.0f, 2.0f});
  expect_factors({16.0f, 1.0f, 81.0f}, {1.0f, 16.0f, 0.0625f}, 0.75f, {8.0f, 0.5f, 54.0f});
  expect_factors({3.0f, 0.5f}, {4.0f, 0.25f}, 0.0f, {0.25f, 4.0f});
  expect_factors({3.0f, 0.5f}, {4.0f, 0.25f}, 1.0f, {3.0f, 0.5f});
}

// A channel with no activation or weight range keeps 1; tiny factors are clamped to 1e-5; bad
// inputs are InvalidArgument.
TEST(SmoothQuant, DegenerateChannelsAndBadArguments) {
  const auto s = smoothing_factors(std::vector<float>{0.0f, 2.0f, 1e-12f}, std::vector<float>{3.0f, 0.0f, 1.0f}, 1.0f);
  EXPECT_EQ(s, (std::vector<float>{1.0f, 1.0f, 1e-5f}));
  const std::vector<float> one = {1.0f};
  EXPECT_THROW(smoothing_factors(one, one, -0.1f), InvalidArgument);
  EXPECT_THROW(smoothing_factors(one, one, 1.5f), InvalidArgument);
  EXPECT_THROW(smoothing_factors(one, std::vector<float>{1.0f, 2.0f}, 0.5f), InvalidArgument);
  std::vector<float> norm = {1.0f, 2.0f};
  EXPECT_THROW(divide_norm(norm, one), InvalidArgument);
  EXPECT_THROW(scale_columns(norm, 1, 2, one), InvalidArgument);
}

struct Observed {
  // [layer][input] -> the rows the forward showed, and their per-column max |x|.
  std::vector<std::array<std::vector<float>, 4>> rows, col_absmax;
};

Observed observe(const Model& model, const std::vector<int32_t>& tokens) {
  Observed o;
  const auto L = static_cast<size_t>(model.config().num_layers);
  o.rows.resize(L);
  o.col_absmax.resize(L);
  observe_sequence(model, tokens, 1, [&](int64_t layer, LinearInput input, std::span<const float> x, int64_t rows, int64_t cols) {
    const auto i = static_cast<size_t>(input);
    o.rows[static_cast<size_t>(layer)][i].assign(x.begin(), x.end());
    auto& m = o.col_absmax[static_cast<size_t>(layer)][i];
    m.assign(static_cast<size_t>(cols), 0.0f);
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c) m[static_cast<size_t>(c)] = std::max(m[static_cast<size_t>(c)], std::fabs(x[static_cast<size_t>(r * cols + c)]));
  });
  return o;
}

double max_abs(std::span<const float> v) {
  double m = 0.0;
  for (float x : v) m = std::max(m, static_cast<double>(std::fabs(x)));
  return m;
}

// Folding calibrated factors (alpha 0.5) into every layer's attention norm + q/k/v and MLP norm +
// gate/up of a random f32 model with outlier channels: each layer's attention output (o_proj's
// input), MLP activation (down's input) and the logits stay equal to f32 rounding; the smoothed
// inputs are X / s, and per channel max|X / s| = max|W * s| (= sqrt(max|X| max|W|) at alpha 0.5).
TEST(SmoothQuant, FoldingKeepsEveryLayerOutput) {
  using testing::RandomModel;
  RandomModel original = testing::make_random_model(testing::small_config(), 5);
  const ModelConfig& c = original.config;
  const int64_t H = c.hidden_size;
  // Outlier input channels, as SmoothQuant targets: a few norm weights 20-50x the rest.
  for (int64_t l = 0; l < c.num_layers; ++l)
    for (WeightRole role : {WeightRole::kAttnNorm, WeightRole::kFfnNorm}) {
      auto& norm = (*original.tensors)[weight_name(WeightFormat::kHf, role, l)];
      norm[3] *= 20.0f;
      norm[static_cast<size_t>(H - 2)] *= -50.0f;
    }
  const std::vector<int32_t> tokens = {3, 17, 25, 8, 39, 0, 12, 31, 5, 22, 14, 9};
  const Model model = original.build();
  const Observed before = observe(model, tokens);
  const std::vector<float> logits_before = sequence_logits(model, tokens);

  RandomModel folded = original;
  folded.tensors = std::make_shared<std::map<std::string, std::vector<float>>>(*original.tensors);
  std::vector<std::array<std::vector<float>, 2>> factors;  // [layer][attn, ffn]
  const auto fold = [&](int64_t l, WeightRole norm_role, std::initializer_list<WeightRole> roles, LinearInput input) {
    std::vector<float> w_absmax(static_cast<size_t>(H), 0.0f);
    for (WeightRole role : roles) {
      const auto name = weight_name(WeightFormat::kHf, role, l);
      accumulate_column_absmax(folded.at(name), folded.shapes.at(name)[0], H, w_absmax);
    }
    const auto& x_absmax = before.col_absmax[static_cast<size_t>(l)][static_cast<size_t>(input)];
    auto s = smoothing_factors(x_absmax, w_absmax, 0.5f);
    for (WeightRole role : roles) {
      const auto name = weight_name(WeightFormat::kHf, role, l);
      scale_columns((*folded.tensors)[name], folded.shapes.at(name)[0], H, s);
    }
    divide_norm((*folded.tensors)[weight_name(WeightFormat::kHf, norm_role, l)], s);
    // The balance SmoothQuant aims at, on the folded weights.
    std::vector<float> w_after(static_cast<size_t>(H), 0.0f);
    for (WeightRole role : roles) {
      const auto name = weight_name(WeightFormat::kHf, role, l);
      accumulate_column_absmax(folded.at(name), folded.shapes.at(name)[0], H, w_after);
    }
    for (int64_t j = 0; j < H; ++j) {
      const auto J = static_cast<size_t>(j);
      const double balanced = std::sqrt(static_cast<double>(x_absmax[J]) * w_absmax[J]);
      EXPECT_NEAR(w_after[J], balanced, 1e-5 * balanced) << "layer " << l << " channel " << j;
    }
    return s;
  };
  for (int64_t l = 0; l < c.num_layers; ++l) {
    auto attn = fold(l, WeightRole::kAttnNorm, {WeightRole::kQ, WeightRole::kK, WeightRole::kV}, LinearInput::kQkv);
    auto ffn = fold(l, WeightRole::kFfnNorm, {WeightRole::kGate, WeightRole::kUp}, LinearInput::kGateUp);
    factors.push_back({std::move(attn), std::move(ffn)});
  }
  // The outliers were real: the factors span more than an order of magnitude.
  const auto [lo, hi] = std::minmax_element(factors[0][0].begin(), factors[0][0].end());
  EXPECT_GT(*hi / *lo, 10.0f);

  const Model smoothed = folded.build();
  const Observed after = observe(smoothed, tokens);
  const std::vector<float> logits_after = sequence_logits(smoothed, tokens);

  const auto T = static_cast<int64_t>(tokens.size());
  for (int64_t l = 0; l < c.num_layers; ++l) {
    const auto L = static_cast<size_t>(l);
    // Smoothed inputs: X / s exactly as far as f32 rounding goes, and balanced against the weights.
    for (auto [input, k] : {std::pair{LinearInput::kQkv, 0}, std::pair{LinearInput::kGateUp, 1}}) {
      const auto& x = before.rows[L][static_cast<size_t>(input)];
      const auto& xs = after.rows[L][static_cast<size_t>(input)];
      const auto& s = factors[L][static_cast<size_t>(k)];
      ASSERT_EQ(xs.size(), static_cast<size_t>(T * H));
      const double scale = max_abs(x);
      for (int64_t t = 0; t < T; ++t)
        for (int64_t j = 0; j < H; ++j) {
          const auto i = static_cast<size_t>(t * H + j);
          EXPECT_NEAR(xs[i] * s[static_cast<size_t>(j)], x[i], 1e-5 * scale) << "layer " << l << " row " << t << " channel " << j;
        }
    }
    // The layer's outputs before o_proj and down.
    for (LinearInput input : {LinearInput::kO, LinearInput::kDown}) {
      const auto& want = before.rows[L][static_cast<size_t>(input)];
      const auto& got = after.rows[L][static_cast<size_t>(input)];
      ASSERT_EQ(got.size(), want.size());
      const double tolerance = 1e-5 * max_abs(want);
      for (size_t i = 0; i < want.size(); ++i)
        ASSERT_NEAR(got[i], want[i], tolerance) << "layer " << l << " input " << static_cast<int>(input) << " index " << i;
    }
  }
  ASSERT_EQ(logits_after.size(), logits_before.size());
  const double tolerance = 1e-5 * max_abs(logits_before);
  for (size_t i = 0; i < logits_before.size(); ++i) ASSERT_NEAR(logits_after[i], logits_before[i], tolerance) << i;
}

}  // namespace
}  // namespace lemma::quant
