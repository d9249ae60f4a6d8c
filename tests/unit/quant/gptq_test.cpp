// GPTQ's error compensation (quant/gptq.h, issue 6 item 4, G18): with uncorrelated inputs it is
// round to nearest exactly; with correlated ones it lowers the output error it minimises; a
// two-input case against the closed form; act-order's g_idx; any thread count gives the same codes;
// the Hessian is x^T x.
#include <cmath>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "lemma/base/error.h"
#include "lemma/quant/gptq.h"
#include "lemma/quant/grouped_int_weight.h"

namespace lemma::quant {
namespace {

std::vector<float> random_values(int64_t count, unsigned seed, float sd = 0.3f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.02f, sd);
  std::vector<float> v(static_cast<size_t>(count));
  for (auto& x : v) x = dist(rng);
  return v;
}

// Rows x = z A (z Gaussian, A a random [K, K] mix) with per-channel scales 0.2 .. 2: correlated
// inputs of uneven size, as a layer's are.
InputHessian correlated_hessian(int64_t K, int64_t rows, unsigned seed) {
  const auto z = random_values(rows * K, seed, 1.0f);
  const auto a = random_values(K * K, seed + 1, 1.0f);
  std::vector<float> x(static_cast<size_t>(rows * K), 0.0f);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < K; ++j) {
      float s = z[static_cast<size_t>(r * K + j)];
      for (int64_t i = 0; i < K; ++i) s += 0.5f * z[static_cast<size_t>(r * K + i)] * a[static_cast<size_t>(i * K + j)] / std::sqrt(static_cast<float>(K));
      x[static_cast<size_t>(r * K + j)] = s * (0.2f + 1.8f * static_cast<float>(j % 7) / 6.0f);
    }
  InputHessian h(K);
  h.add(std::span(x).first(static_cast<size_t>(rows / 2 * K)), rows / 2);  // in two adds
  h.add(std::span(x).subspan(static_cast<size_t>(rows / 2 * K)), rows - rows / 2);
  return h;
}

void expect_same(const GroupedIntWeight& a, const GroupedIntWeight& b) {
  EXPECT_EQ(a.num_groups, b.num_groups);
  EXPECT_EQ(a.codes, b.codes);
  EXPECT_EQ(a.scales, b.scales);
  EXPECT_EQ(a.zeros, b.zeros);
  EXPECT_EQ(a.g_idx, b.g_idx);
}

struct Case {
  int bits;
  int64_t group;
  bool sym, act_order;
};
const Case kCases[] = {{4, 32, true, false}, {4, 32, false, true}, {4, 0, true, true}, {4, 48, false, false},
                       {8, 32, true, true},  {8, 0, false, false}};

TEST(Gptq, UncorrelatedInputsGiveRoundToNearest) {
  const int64_t N = 5, K = 70;  // K not a multiple of the group: a short last group
  InputHessian h(K);
  std::vector<float> unit(static_cast<size_t>(K * K), 0.0f);
  for (int64_t k = 0; k < K; ++k) unit[static_cast<size_t>(k * K + k)] = 1.0f;
  h.add(unit, K);  // H = I: no channel's error moves another
  const auto w = random_values(N * K, 7);
  for (const Case& c : kCases) {
    SCOPED_TRACE(testing::Message() << c.bits << " bits, group " << c.group << (c.sym ? " sym" : " asym") << (c.act_order ? " act" : ""));
    const auto gptq = gptq_quantize(w, N, K, h, {c.bits, c.group, c.sym, c.act_order});
    // Equal diagonal: act-order's stable sort keeps the stored order.
    expect_same(gptq, quantize_grouped(w, N, K, c.bits, c.group, c.sym ? GroupRounding::kGptqSym : GroupRounding::kGptqAsym));
  }
}

TEST(Gptq, CorrelatedInputsLowerTheOutputError) {
  const int64_t N = 24, K = 96;
  const auto h = correlated_hessian(K, 400, 11);
  const auto w = random_values(N * K, 12);
  for (const Case& c : kCases) {
    SCOPED_TRACE(testing::Message() << c.bits << " bits, group " << c.group << (c.sym ? " sym" : " asym") << (c.act_order ? " act" : ""));
    const auto rounding = c.sym ? GroupRounding::kGptqSym : GroupRounding::kGptqAsym;
    const auto gptq = gptq_quantize(w, N, K, h, {c.bits, c.group, c.sym, c.act_order});
    const auto rtn = quantize_grouped(w, N, K, c.bits, c.group, rounding, gptq.g_idx);  // the same groups
    const double e_gptq = gptq_output_error(w, dequantize_grouped(gptq), h), e_rtn = gptq_output_error(w, dequantize_grouped(rtn), h);
    std::printf("  %d bits, group %lld%s%s: output error GPTQ %.4g, round to nearest %.4g (%.2fx)\n", c.bits,
                static_cast<long long>(c.group), c.sym ? " sym" : " asym", c.act_order ? " act" : "", e_gptq, e_rtn,
                e_rtn / e_gptq);
    EXPECT_LT(e_gptq, 0.8 * e_rtn);
    if (c.act_order) {  // groups in decreasing H_kk: every channel of group i outweighs those of group i + 1
      for (int64_t a = 0; a < K; ++a) {
        for (int64_t b = 0; b < K; ++b) {
          if (gptq.g_idx[static_cast<size_t>(a)] < gptq.g_idx[static_cast<size_t>(b)]) {
            EXPECT_GE(h.at(a, a), h.at(b, b));
          }
        }
      }
    }
  }
}

// lemma's int8/int4 formats: round to nearest under H = I, bit for bit; lower output error on
// correlated inputs.
TEST(Gptq, LemmaFormatsTakeTheSameWalk) {
  const int64_t N = 9, K = 128;
  InputHessian unit(K);
  std::vector<float> eye(static_cast<size_t>(K * K), 0.0f);
  for (int64_t k = 0; k < K; ++k) eye[static_cast<size_t>(k * K + k)] = 1.0f;
  unit.add(eye, K);
  const auto h = correlated_hessian(K, 500, 41);
  const auto w = random_values(N * K, 42);
  for (const char* name : {"int4-g32-sym", "int4-g64-asym", "int4-channel-sym", "int8-channel-sym", "int8-g128-asym"}) {
    SCOPED_TRACE(name);
    const auto spec = *parse_weight_quant_spec(name);
    const auto rtn = quantize_weight(w, N, K, spec);
    const auto same = gptq_quantize_weight(w, N, K, spec, unit, 2);
    EXPECT_EQ(same.qweight, rtn.qweight);
    EXPECT_EQ(same.scales, rtn.scales);
    EXPECT_EQ(same.zeros, rtn.zeros);
    const auto gptq = gptq_quantize_weight(w, N, K, spec, h, 2);
    const double e_gptq = gptq_output_error(w, dequantize_weight(gptq), h), e_rtn = gptq_output_error(w, dequantize_weight(rtn), h);
    std::printf("  %s: output error GPTQ %.4g, round to nearest %.4g (%.2fx)\n", name, e_gptq, e_rtn, e_rtn / e_gptq);
    EXPECT_LT(e_gptq, 0.8 * e_rtn);
  }
}

TEST(Gptq, TwoInputsFollowTheClosedForm) {
  // One output, two inputs, one group, no dampening: after q1, w2 moves by (w1 - q1) H12 / H22.
  InputHessian h(2);
  const std::vector<float> x = {1.0f, 0.5f, -0.3f, 0.8f, 0.9f, 0.7f};
  h.add(x, 3);
  GptqOptions o{4, 0, true, false};
  o.damp = 0.0;
  int moved_codes = 0;
  for (float w2 = -0.9f; w2 <= 0.9f; w2 += 0.0625f) {
    const std::vector<float> w = {0.95f, w2};
    const auto q = gptq_quantize(w, 1, 2, h, o);
    const GroupParams p = choose_group_params(w, 15, GroupRounding::kGptqSym);
    const int q1 = p.code(w[0], 15);
    EXPECT_EQ(q.codes[0], q1);
    const double moved = w[1] + (w[0] - p.value(q1)) * h.at(0, 1) / h.at(1, 1);
    EXPECT_EQ(q.codes[1], p.code(static_cast<float>(moved), 15)) << "w2 " << w2;
    moved_codes += q.codes[1] != p.code(w[1], 15);
  }
  EXPECT_GT(moved_codes, 0) << "no case moved the second code";
}

TEST(Gptq, AnyThreadCountGivesTheSameCodes) {
  // K over three 64-row panels of the factorisation, whose row updates are split too.
  const int64_t N = 37, K = 200;
  const auto h = correlated_hessian(K, 300, 21);
  const auto w = random_values(N * K, 22);
  GptqOptions o{4, 32, false, true};
  const auto one = gptq_quantize(w, N, K, h, o);
  for (const int t : {2, 3, 64}) {
    o.threads = t;
    expect_same(gptq_quantize(w, N, K, h, o), one);
  }
}

TEST(Gptq, HessianIsTheSumOfOuterProducts) {
  const int64_t K = 19, rows = 33;
  const auto x = random_values(rows * K, 31, 1.0f);
  InputHessian h(K);
  h.add(x, rows);
  EXPECT_EQ(h.rows(), rows);
  for (int64_t i = 0; i < K; ++i)
    for (int64_t j = 0; j < K; ++j) {
      double s = 0.0;
      for (int64_t r = 0; r < rows; ++r) s += static_cast<double>(x[static_cast<size_t>(r * K + i)]) * x[static_cast<size_t>(r * K + j)];
      EXPECT_NEAR(h.at(i, j), s, 1e-5 * (1.0 + std::abs(s)));
    }
}

TEST(Gptq, BadArgumentsAreNamed) {
  InputHessian h(8);
  const auto w = random_values(16, 1);
  EXPECT_THROW(gptq_quantize(w, 2, 8, h, {3, 8, true, false}), InvalidArgument);
  EXPECT_THROW(gptq_quantize(w, 4, 8, h, {4, 8, true, false}), InvalidArgument);  // 16 values, not 32
  InputHessian other(4);
  EXPECT_THROW(gptq_quantize(w, 2, 8, other, {4, 8, true, false}), InvalidArgument);
  // No rows seen: every input unseen, H = damped identity: round to nearest.
  expect_same(gptq_quantize(w, 2, 8, h, {4, 8, true, false}), quantize_grouped(w, 2, 8, 4, 8, GroupRounding::kGptqSym));
}

}  // namespace
}  // namespace lemma::quant
