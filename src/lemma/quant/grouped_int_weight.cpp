#include "lemma/quant/grouped_int_weight.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>

#include "lemma/base/error.h"
#include "lemma/kernels/float_bits.h"
#include "lemma/quant/runnable_weights.h"
#include "lemma/quant/weight_format.h"

namespace lemma::quant {

namespace {

constexpr int64_t kBlock = 32;

}  // namespace

int GroupParams::code(float x, int maxq) const {
  if (scale == 0.0f) return zero;
  return std::clamp(static_cast<int>(std::nearbyint(x / scale)) + zero, 0, maxq);
}

GroupParams choose_group_params(std::span<const float> x, int maxq, GroupRounding rounding) {
  float lo = 0.0f, hi = 0.0f, amax = 0.0f;
  if (rounding == GroupRounding::kAwq && !x.empty()) lo = hi = x[0];
  for (const float v : x) {
    lo = std::min(lo, v);
    hi = std::max(hi, v);
    amax = std::max(amax, std::fabs(v));
  }
  if (rounding == GroupRounding::kGptqSym) {
    const float scale = kernels::f16_to_f32(kernels::f32_to_f16(2.0f * amax / static_cast<float>(maxq)));
    return {scale, (maxq + 1) / 2};
  }
  const float raw = (hi - lo) / static_cast<float>(maxq);
  const float scale = kernels::f16_to_f32(kernels::f32_to_f16(raw));
  if (!std::isfinite(scale)) fail<InvalidArgument>("group scale {} does not fit in f16", raw);
  const int zero = scale == 0.0f ? 0 : std::clamp(static_cast<int>(std::nearbyint(-lo / scale)), 0, maxq);
  return {scale, zero};
}

float GroupedIntWeight::value(int64_t n, int64_t k) const {
  const auto g = static_cast<size_t>(g_idx[static_cast<size_t>(k)] * out_features + n);
  return kernels::f16_to_f32(scales[g]) *
         static_cast<float>(static_cast<int>(codes[static_cast<size_t>(n * in_features + k)]) - zeros[g]);
}

std::vector<int32_t> act_order_g_idx(std::span<const float> score, int64_t group_size) {
  std::vector<int32_t> perm(score.size());
  std::iota(perm.begin(), perm.end(), 0);
  std::stable_sort(perm.begin(), perm.end(), [&](int32_t a, int32_t b) { return score[a] > score[b]; });
  const auto K = static_cast<int64_t>(score.size());
  const int64_t g = group_size <= 0 ? K : group_size;
  std::vector<int32_t> g_idx(score.size());
  for (int64_t i = 0; i < K; ++i) g_idx[static_cast<size_t>(perm[static_cast<size_t>(i)])] = static_cast<int32_t>(i / g);
  return g_idx;
}

GroupedIntWeight quantize_grouped(std::span<const float> values, int64_t N, int64_t K, int bits, int64_t group_size,
                                  GroupRounding rounding, std::vector<int32_t> g_idx) {
  if (bits != 4 && bits != 8) fail<InvalidArgument>("grouped int weights have 4 or 8 bits, not {}", bits);
  if (N <= 0 || K <= 0 || static_cast<int64_t>(values.size()) != N * K)
    fail<InvalidArgument>("{} values given for a [{}, {}] matrix", values.size(), N, K);
  GroupedIntWeight w;
  w.bits = bits;
  w.out_features = N;
  w.in_features = K;
  if (g_idx.empty()) {
    const int64_t g = group_size <= 0 ? K : group_size;
    g_idx.resize(static_cast<size_t>(K));
    for (int64_t k = 0; k < K; ++k) g_idx[static_cast<size_t>(k)] = static_cast<int32_t>(k / g);
  }
  if (static_cast<int64_t>(g_idx.size()) != K) fail<InvalidArgument>("g_idx has {} entries for {} inputs", g_idx.size(), K);
  w.num_groups = *std::max_element(g_idx.begin(), g_idx.end()) + 1;
  w.g_idx = std::move(g_idx);
  std::vector<std::vector<int64_t>> members(static_cast<size_t>(w.num_groups));
  for (int64_t k = 0; k < K; ++k) members[static_cast<size_t>(w.g_idx[static_cast<size_t>(k)])].push_back(k);
  w.codes.resize(static_cast<size_t>(N * K));
  w.zeros.resize(static_cast<size_t>(w.num_groups * N));
  w.scales.resize(static_cast<size_t>(w.num_groups * N));
  const int maxq = w.max_code();
  std::vector<float> x;
  for (int64_t g = 0; g < w.num_groups; ++g) {
    const auto& ks = members[static_cast<size_t>(g)];
    for (int64_t n = 0; n < N; ++n) {
      x.clear();
      for (const int64_t k : ks) x.push_back(values[static_cast<size_t>(n * K + k)]);
      const GroupParams p = choose_group_params(x, maxq, rounding);
      w.scales[static_cast<size_t>(g * N + n)] = kernels::f32_to_f16(p.scale);
      w.zeros[static_cast<size_t>(g * N + n)] = static_cast<uint8_t>(p.zero);
      for (size_t i = 0; i < ks.size(); ++i) w.codes[static_cast<size_t>(n * K + ks[i])] = static_cast<uint8_t>(p.code(x[i], maxq));
    }
  }
  return w;
}

std::vector<float> dequantize_grouped(const GroupedIntWeight& w) {
  std::vector<float> out(static_cast<size_t>(w.out_features * w.in_features));
  for (int64_t n = 0; n < w.out_features; ++n)
    for (int64_t k = 0; k < w.in_features; ++k) out[static_cast<size_t>(n * w.in_features + k)] = w.value(n, k);
  return out;
}

void check_grouped(const GroupedIntWeight& w, const std::string& what) {
  const int maxq = w.max_code();
  for (size_t k = 0; k < w.g_idx.size(); ++k) {
    if (w.g_idx[k] < 0 || w.g_idx[k] >= w.num_groups)
      fail<FormatError>("{}: g_idx[{}] = {} is outside 0..{}", what, k, w.g_idx[k], w.num_groups - 1);
  }
  for (size_t i = 0; i < w.zeros.size(); ++i) {
    if (w.zeros[i] > maxq) fail<FormatError>("{}: zero point {} exceeds {}", what, w.zeros[i], maxq);
  }
}

std::vector<int32_t> group_sorted_order(std::span<const int32_t> g_idx) {
  std::vector<int32_t> order(g_idx.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return g_idx[a] < g_idx[b]; });
  return order;
}

GroupedIntWeight permute_inputs(const GroupedIntWeight& w, std::span<const int32_t> order) {
  const int64_t N = w.out_features, K = w.in_features;
  if (static_cast<int64_t>(order.size()) != K) fail<InvalidArgument>("input order has {} entries for {} inputs", order.size(), K);
  GroupedIntWeight out = w;
  for (int64_t j = 0; j < K; ++j) {
    const int32_t k = order[static_cast<size_t>(j)];
    if (k < 0 || k >= K) fail<InvalidArgument>("input order entry {} is outside 0..{}", k, K - 1);
    out.g_idx[static_cast<size_t>(j)] = w.g_idx[static_cast<size_t>(k)];
    for (int64_t n = 0; n < N; ++n) out.codes[static_cast<size_t>(n * K + j)] = w.codes[static_cast<size_t>(n * K + k)];
  }
  return out;
}

namespace {

bool whole_blocks(const GroupedIntWeight& w) {
  const int64_t K = w.in_features;
  bool blockwise = K % kBlock == 0;
  for (int64_t k = 0; blockwise && k < K; ++k)
    blockwise = w.g_idx[static_cast<size_t>(k)] == w.g_idx[static_cast<size_t>(k - k % kBlock)];
  return blockwise;
}

// `w` in lemma's 32-value blocks (whole_blocks(w) holds).
RuntimeWeight to_blocks(const GroupedIntWeight& w) {
  const int64_t N = w.out_features, K = w.in_features;
  const int mid = (w.max_code() + 1) / 2;
  const bool sym = std::all_of(w.zeros.begin(), w.zeros.end(), [mid](uint8_t z) { return z == mid; });
  QuantizedWeight q;
  q.spec.bits = w.bits;
  q.spec.symmetric = sym;
  q.spec.group_size = kBlock;
  q.rows = N;
  q.cols = K;
  const int64_t blocks = K / kBlock;
  q.qweight.assign(static_cast<size_t>(N * q.qweight_row_bytes()), 0);
  q.scales.resize(static_cast<size_t>(N * blocks));
  if (!sym) q.zeros.resize(static_cast<size_t>(N * blocks));
  for (int64_t n = 0; n < N; ++n) {
    uint8_t* row = q.qweight.data() + n * q.qweight_row_bytes();
    for (int64_t b = 0; b < blocks; ++b) {
      const auto g = static_cast<size_t>(w.g_idx[static_cast<size_t>(b * kBlock)] * N + n);
      q.scales[static_cast<size_t>(n * blocks + b)] = w.scales[g];
      if (!sym) q.zeros[static_cast<size_t>(n * blocks + b)] = w.zeros[g];
    }
    for (int64_t k = 0; k < K; ++k) {
      const int code = w.codes[static_cast<size_t>(n * K + k)];
      // lemma's stored codes: int8 sym as the two's complement byte of code - 128; int4 (sym: q + 8
      // with q = code - 8) and asym codes as they are.
      const auto stored = static_cast<uint8_t>(w.bits == 8 && sym ? code - 128 : code);
      if (w.bits == 8) row[k] = stored;
      else row[k / 2] |= static_cast<uint8_t>(k % 2 == 0 ? stored : stored << 4);
    }
  }
  RuntimeWeight out;
  out.dtype = served_dtype_for(q.spec);
  out.bytes = to_runtime_blocks(q);
  return out;
}

}  // namespace

RuntimeWeight to_runtime(const GroupedIntWeight& w) {
  if (whole_blocks(w)) return to_blocks(w);
  if (w.in_features % kBlock == 0) {  // act-order: whole blocks once the inputs are taken by group?
    auto order = group_sorted_order(w.g_idx);
    const GroupedIntWeight sorted = permute_inputs(w, order);
    if (whole_blocks(sorted)) {
      RuntimeWeight out = to_blocks(sorted);
      out.input_order = std::move(order);
      return out;
    }
  }
  RuntimeWeight out;  // groups of sizes that are not whole blocks: the exact values
  const auto values = dequantize_grouped(w);
  out.bytes.resize(values.size() * sizeof(float));
  std::memcpy(out.bytes.data(), values.data(), out.bytes.size());
  return out;
}

}  // namespace lemma::quant
