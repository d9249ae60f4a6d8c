// GPTQ and AWQ packing (issue 6 item 4, G18): the bit layouts against hand-made words, round trips
// (pack -> unpack gives the quantizer's codes, zeros, scales and g_idx bit for bit) on odd shapes,
// group sizes, act-order and 8 bits, the runtime blocks' values equal to the dequantized weight,
// and malformed tensors rejected with the tensor's name.
#include <algorithm>
#include <utility>
#include <cmath>
#include <cstring>
#include <tuple>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "lemma/base/error.h"
#include "lemma/kernels/dequantize.h"
#include "lemma/kernels/float_bits.h"
#include "lemma/quant/awq_packing.h"
#include "lemma/quant/gptq_packing.h"
#include "lemma/quant/grouped_int_weight.h"

namespace lemma::quant {
namespace {

std::vector<float> random_matrix(int64_t n, int64_t k, unsigned seed, float mean = 0.05f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(mean, 0.3f);
  std::vector<float> x(static_cast<size_t>(n * k));
  for (auto& v : x) v = dist(rng);
  return x;
}

template <typename T>
TensorView view_of(const std::vector<T>& v, DType dtype, Shape shape) {
  return TensorView{v.data(), dtype, shape};
}

GroupedIntWeight gptq_round_trip(const GroupedIntWeight& w, bool with_g_idx, int64_t group_size) {
  const auto t = pack_gptq(w);
  const int pack = 32 / w.bits;
  const int64_t N = w.out_features, K = w.in_features;
  EXPECT_EQ(t.qweight.size(), static_cast<size_t>(K / pack * N));
  EXPECT_EQ(t.qzeros.size(), static_cast<size_t>(w.num_groups * N / pack));
  const auto g = view_of(t.g_idx, DType::kI32, Shape{K});
  return unpack_gptq("layer.q_proj", w.bits, group_size, view_of(t.qweight, DType::kI32, Shape{K / pack, N}),
                     view_of(t.qzeros, DType::kI32, Shape{w.num_groups, N / pack}),
                     view_of(t.scales, DType::kF16, Shape{w.num_groups, N}),
                     with_g_idx ? std::optional<TensorView>(g) : std::nullopt);
}

void expect_same(const GroupedIntWeight& a, const GroupedIntWeight& b) {
  EXPECT_EQ(a.bits, b.bits);
  EXPECT_EQ(a.out_features, b.out_features);
  EXPECT_EQ(a.in_features, b.in_features);
  EXPECT_EQ(a.num_groups, b.num_groups);
  EXPECT_EQ(a.codes, b.codes);
  EXPECT_EQ(a.zeros, b.zeros);
  EXPECT_EQ(a.scales, b.scales);
  EXPECT_EQ(a.g_idx, b.g_idx);
}

TEST(GptqPacking, LayoutMatchesTheFormat) {
  // Input k of output n at bits 4 * (k % 8) of qweight[k / 8, n]; zero - 1 at bits 4 * (n % 8) of qzeros.
  GroupedIntWeight w;
  w.bits = 4;
  w.out_features = 8;
  w.in_features = 8;
  w.num_groups = 1;
  w.codes.assign(64, 0);
  for (int k = 0; k < 8; ++k) w.codes[static_cast<size_t>(k)] = static_cast<uint8_t>(k + 1);  // output 0
  w.zeros = {8, 1, 0, 15, 8, 8, 8, 8};
  w.scales.assign(8, 0x3C00);
  w.g_idx.assign(8, 0);
  const auto t = pack_gptq(w);
  EXPECT_EQ(static_cast<uint32_t>(t.qweight[0]), 0x87654321u);
  EXPECT_EQ(t.qweight[1], 0);
  // zero 8 -> 7, 1 -> 0, 0 -> 15 (v1's zero - 1 wraps in its field), 15 -> 14.
  EXPECT_EQ(static_cast<uint32_t>(t.qzeros[0]), 0x7777EF07u);
  expect_same(gptq_round_trip(w, true, 8), w);
}

TEST(GptqPacking, RoundTripsBitForBit) {
  struct Case {
    int bits;
    int64_t n, k, group;
    GroupRounding rounding;
    bool act_order;
  };
  for (const Case c : {Case{4, 24, 40, 32, GroupRounding::kGptqSym, false},   // partial last group
                       Case{4, 16, 64, 64, GroupRounding::kGptqAsym, false},
                       Case{4, 8, 128, -1, GroupRounding::kGptqAsym, false},  // one group
                       Case{4, 32, 96, 32, GroupRounding::kGptqAsym, true},   // act-order
                       Case{4, 40, 256, 128, GroupRounding::kGptqSym, true},
                       Case{8, 12, 36, 32, GroupRounding::kGptqAsym, false},
                       Case{8, 20, 64, -1, GroupRounding::kGptqSym, true}}) {
    SCOPED_TRACE(::testing::Message() << c.bits << " bits [" << c.n << ", " << c.k << "] group " << c.group
                                    << (c.act_order ? " act-order" : ""));
    const auto x = random_matrix(c.n, c.k, static_cast<unsigned>(c.n * c.k + c.bits));
    std::vector<float> score(static_cast<size_t>(c.k));
    for (int64_t k = 0; k < c.k; ++k) score[static_cast<size_t>(k)] = std::abs(x[static_cast<size_t>(k)]);
    const auto g_idx = c.act_order ? act_order_g_idx(score, c.group) : std::vector<int32_t>{};
    const auto w = quantize_grouped(x, c.n, c.k, c.bits, c.group, c.rounding, g_idx);
    if (c.act_order && c.group > 0) {
      // Act-order groups are not runs of consecutive inputs.
      bool scattered = false;
      for (int64_t k = 1; k < c.k; ++k) scattered |= w.g_idx[static_cast<size_t>(k)] < w.g_idx[static_cast<size_t>(k - 1)];
      EXPECT_TRUE(scattered);
    }
    expect_same(gptq_round_trip(w, true, c.group), w);
    if (!c.act_order) expect_same(gptq_round_trip(w, false, c.group), w);  // g_idx absent: k / group
    // Every value within half a step of its input (the rounding error), except clamped extremes.
    const auto values = dequantize_grouped(w);
    for (int64_t n = 0; n < c.n; ++n)
      for (int64_t k = 0; k < c.k; ++k) {
        const auto g = static_cast<size_t>(w.g_idx[static_cast<size_t>(k)] * c.n + n);
        const float scale = kernels::f16_to_f32(w.scales[g]);
        EXPECT_LE(std::abs(values[static_cast<size_t>(n * c.k + k)] - x[static_cast<size_t>(n * c.k + k)]), scale * 1.01f);
      }
  }
}

TEST(AwqPacking, LayoutMatchesTheFormat) {
  // Outputs 0..7 of input 0 with codes 0..7: field i holds output kAwqOrder[i] = 0,2,4,6,1,3,5,7.
  GroupedIntWeight w;
  w.bits = 4;
  w.out_features = 8;
  w.in_features = 32;
  w.num_groups = 1;
  w.codes.assign(8 * 32, 0);
  for (int n = 0; n < 8; ++n) w.codes[static_cast<size_t>(n * 32)] = static_cast<uint8_t>(n);
  w.zeros = {0, 1, 2, 3, 4, 5, 6, 7};
  w.scales.assign(8, 0x3C00);
  for (int k = 0; k < 32; ++k) w.g_idx.push_back(0);
  const auto t = pack_awq(w);
  ASSERT_EQ(t.qweight.size(), 32u);
  EXPECT_EQ(static_cast<uint32_t>(t.qweight[0]), 0x75316420u);
  EXPECT_EQ(static_cast<uint32_t>(t.qzeros[0]), 0x75316420u);
  const auto back = unpack_awq("m.up_proj", 32, view_of(t.qweight, DType::kI32, Shape{32, 1}),
                               view_of(t.qzeros, DType::kI32, Shape{1, 1}), view_of(t.scales, DType::kF16, Shape{1, 8}));
  expect_same(back, w);
}

TEST(AwqPacking, RoundTripsBitForBit) {
  for (const auto& [n, k, group] : {std::tuple<int64_t, int64_t, int64_t>{8, 32, 32}, {24, 96, 32}, {40, 128, 64},
                                   {16, 256, 128}}) {
    const auto x = random_matrix(n, k, static_cast<unsigned>(n + k));
    const auto w = quantize_grouped(x, n, k, 4, group, GroupRounding::kAwq);
    const auto t = pack_awq(w);
    const auto back = unpack_awq("m.down_proj", group, view_of(t.qweight, DType::kI32, Shape{k, n / 8}),
                                 view_of(t.qzeros, DType::kI32, Shape{k / group, n / 8}),
                                 view_of(t.scales, DType::kF16, Shape{k / group, n}));
    expect_same(back, w);
  }
}

// The runtime form holds exactly the dequantized values: 32-value blocks when groups are whole
// blocks (symmetric -> q4_0 / q8_0, else i4z32 / i8z32); with act-order, whose groups are scattered
// over k, the same blocks over the inputs sorted by group (input_order: column j holds input
// order[j]) when those groups are whole blocks; f32 in the stored order otherwise (groups of 16,
// K % 32 != 0).
TEST(GroupedIntWeight, RuntimeFormHoldsTheSameValues) {
  struct Case {
    int bits;
    int64_t k, group;
    GroupRounding rounding;
    bool act_order;
    DType expected;
  };
  for (const Case c : {Case{4, 128, 32, GroupRounding::kGptqSym, false, DType::kQ4_0},
                       Case{4, 128, 64, GroupRounding::kGptqAsym, false, DType::kI4Z32},
                       Case{4, 96, -1, GroupRounding::kAwq, false, DType::kI4Z32},
                       Case{8, 64, 32, GroupRounding::kGptqSym, false, DType::kQ8_0},
                       Case{8, 128, 128, GroupRounding::kGptqAsym, false, DType::kI8Z32},
                       Case{4, 128, 32, GroupRounding::kGptqAsym, true, DType::kI4Z32},
                       Case{8, 192, 64, GroupRounding::kGptqSym, true, DType::kQ8_0},
                       Case{4, 128, 16, GroupRounding::kGptqSym, true, DType::kF32},
                       Case{4, 40, 8, GroupRounding::kGptqSym, false, DType::kF32}}) {
    SCOPED_TRACE(::testing::Message() << c.bits << " bits K " << c.k << " group " << c.group << " act " << c.act_order);
    const int64_t n = 16;
    const auto x = random_matrix(n, c.k, static_cast<unsigned>(c.k + c.group));
    std::vector<float> score(x.begin(), x.begin() + c.k);
    const auto g_idx = c.act_order ? act_order_g_idx(score, c.group) : std::vector<int32_t>{};
    const auto w = quantize_grouped(x, n, c.k, c.bits, c.group, c.rounding, g_idx);
    const auto r = to_runtime(w);
    EXPECT_EQ(r.dtype, c.expected);
    ASSERT_EQ(r.bytes.size(), *dtype_bytes(r.dtype, static_cast<uint64_t>(n * c.k)));
    std::vector<float> values(static_cast<size_t>(n * c.k));
    kernels::dequantize_row(r.dtype, r.bytes.data(), values.data(), n * c.k);
    const bool reordered = c.act_order && c.expected != DType::kF32;
    ASSERT_EQ(r.input_order.size(), reordered ? static_cast<size_t>(c.k) : 0u);
    if (reordered) {
      std::vector<int32_t> sorted = r.input_order;
      std::sort(sorted.begin(), sorted.end());
      for (int64_t k = 0; k < c.k; ++k) ASSERT_EQ(sorted[static_cast<size_t>(k)], k) << "not a permutation";
      for (int64_t j = 1; j < c.k; ++j)  // by group, ascending k within one
        ASSERT_LT(std::pair(w.g_idx[r.input_order[j - 1]], r.input_order[j - 1]), std::pair(w.g_idx[r.input_order[j]], r.input_order[j]));
      std::vector<float> stored_order(values.size());
      for (int64_t row = 0; row < n; ++row)
        for (int64_t j = 0; j < c.k; ++j)
          stored_order[static_cast<size_t>(row * c.k + r.input_order[static_cast<size_t>(j)])] = values[static_cast<size_t>(row * c.k + j)];
      values = stored_order;
    }
    EXPECT_EQ(values, dequantize_grouped(w));
  }
}

TEST(GptqPacking, MalformedTensorsNameTheTensor) {
  const auto x = random_matrix(16, 64, 3);
  const auto w = quantize_grouped(x, 16, 64, 4, 32, GroupRounding::kGptqAsym);
  const auto t = pack_gptq(w);
  const auto qweight = view_of(t.qweight, DType::kI32, Shape{8, 16});
  const auto qzeros = view_of(t.qzeros, DType::kI32, Shape{2, 2});
  const auto scales = view_of(t.scales, DType::kF16, Shape{2, 16});
  const auto expect_error = [](const auto& call, const std::string& needle) {
    try {
      call();
      ADD_FAILURE() << "no error; expected one naming " << needle;
    } catch (const FormatError& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  expect_error([&] { unpack_gptq("l.o_proj", 4, 32, qweight, view_of(t.qzeros, DType::kI32, Shape{1, 4}), scales, std::nullopt); },
               "l.o_proj.qzeros");
  expect_error([&] { unpack_gptq("l.o_proj", 4, 32, qweight, qzeros, view_of(t.scales, DType::kF32, Shape{2, 8}), std::nullopt); },
               "l.o_proj.scales");
  expect_error([&] { unpack_gptq("l.o_proj", 3, 32, qweight, qzeros, scales, std::nullopt); }, "bits 3");
  expect_error([&] { unpack_gptq("l.o_proj", 4, 16, qweight, qzeros, scales, std::nullopt); }, "l.o_proj.scales");
  std::vector<int32_t> bad_g_idx(64, 0);
  bad_g_idx[5] = 7;
  expect_error([&] { unpack_gptq("l.o_proj", 4, 32, qweight, qzeros, scales, view_of(bad_g_idx, DType::kI32, Shape{64})); },
               "g_idx[5] = 7");
  expect_error([&] { unpack_gptq("l.o_proj", 4, 32, qweight, qzeros, scales, view_of(bad_g_idx, DType::kI32, Shape{63})); },
               "l.o_proj.g_idx");
  const auto awq = pack_awq(quantize_grouped(x, 16, 64, 4, 32, GroupRounding::kAwq));
  expect_error([&] { unpack_awq("l.gate_proj", 32, view_of(awq.qweight, DType::kI32, Shape{64, 2}),
                                view_of(awq.qzeros, DType::kI32, Shape{2, 2}), view_of(awq.scales, DType::kF16, Shape{16, 2})); },
               "l.gate_proj.scales");
  expect_error([&] { unpack_awq("l.gate_proj", 48, view_of(awq.qweight, DType::kI32, Shape{64, 2}),
                                view_of(awq.qzeros, DType::kI32, Shape{2, 2}), view_of(awq.scales, DType::kF16, Shape{2, 16})); },
               "l.gate_proj: 64 inputs do not fill groups of 48");
}

}  // namespace
}  // namespace lemma::quant
