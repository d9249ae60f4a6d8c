// The decoded image shared by the GPTQ and AWQ checkpoint formats: integer codes, one f16 scale
// and one integer zero point per (group, output channel), and the group of each input channel
// (g_idx; GPTQ act-order makes it a permutation of groups, otherwise k / group_size).
// value[n, k] = scale[g_idx[k], n] * (code[n, k] - zero[g_idx[k], n]). Plain data; functions are
// pure and thread-safe.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "lemma/tensor/dtype.h"

namespace lemma::quant {

struct GroupedIntWeight {
  int bits = 4;                   // 4 or 8
  int64_t out_features = 0;       // N (rows of the HF Linear weight)
  int64_t in_features = 0;        // K
  int64_t num_groups = 0;
  std::vector<uint8_t> codes;     // [N, K], 0 .. 2^bits - 1
  std::vector<uint8_t> zeros;     // [num_groups, N]
  std::vector<uint16_t> scales;   // f16 bits, [num_groups, N]
  std::vector<int32_t> g_idx;     // [K], each in 0 .. num_groups - 1

  int max_code() const { return (1 << bits) - 1; }
  float value(int64_t n, int64_t k) const;
};

// How a group's scale and zero point are chosen (round to nearest: the packers write
// round-to-nearest weights in each format's layout; no GPTQ error compensation, no AWQ scale search):
//   kGptqSym:  scale = 2 max|x| / maxq, zero = (maxq + 1) / 2          (AutoGPTQ sym=True)
//   kGptqAsym: scale = (max(x, 0) - min(x, 0)) / maxq, zero = round(-min(x, 0) / scale)
//   kAwq:      scale = (max x - min x) / maxq, zero = clamp(round(-min x / scale), 0, maxq)
// The scale is rounded to f16 first and the codes are clamp(round(x / scale) + zero, 0, maxq)
// with the rounded scale (round half to even). A group whose scale is 0 gets codes = zero.
enum class GroupRounding { kGptqSym, kGptqAsym, kAwq };

// One group's scale (already rounded through f16) and zero point under `rounding`, and a value's
// code against them. Throws InvalidArgument when the scale overflows f16.
struct GroupParams {
  float scale = 0.0f;
  int zero = 0;
  int code(float x, int maxq) const;  // clamp(round_half_even(x / scale) + zero, 0, maxq); zero when scale is 0
  float value(int code) const { return scale * static_cast<float>(code - zero); }
};
GroupParams choose_group_params(std::span<const float> x, int maxq, GroupRounding rounding);

// Quantizes a row-major [N, K] f32 matrix. `g_idx` ([K]) names each input channel's group;
// empty means k / group_size (group_size <= 0: one group). Throws InvalidArgument for bad shapes.
GroupedIntWeight quantize_grouped(std::span<const float> values, int64_t out_features, int64_t in_features, int bits,
                                  int64_t group_size, GroupRounding rounding, std::vector<int32_t> g_idx = {});

// The act-order permutation the GPTQ packer uses: input channels by decreasing importance
// (the caller's per-channel score, e.g. max |W[:, k]|; ties keep the lower index first), and the
// g_idx it gives: g_idx[perm[i]] = i / group_size.
std::vector<int32_t> act_order_g_idx(std::span<const float> channel_score, int64_t group_size);

// The exact f32 values [N, K].
std::vector<float> dequantize_grouped(const GroupedIntWeight& weight);

// The input order that makes each group one contiguous run: channels by group, ascending within
// one (a stable sort of k by g_idx[k]). GPTQ act-order's g_idx becomes whole groups in this order.
std::vector<int32_t> group_sorted_order(std::span<const int32_t> g_idx);

// The same weight over the inputs taken in `order` (a permutation of 0 .. K-1): column j of the
// result is column order[j] of `weight` (codes and g_idx; scales and zeros are per group and stay).
GroupedIntWeight permute_inputs(const GroupedIntWeight& weight, std::span<const int32_t> order);

// Runtime form (what Model::open serves): lossless 32-value blocks (symmetric — every zero is
// 2^(bits-1) — as GGUF Q4_0/Q8_0, else lemma i4z32/i8z32) when K is a multiple of 32 and every
// aligned run of 32 input channels lies in one group, either as stored or — GPTQ act-order, whose
// groups are scattered over k — after reordering the inputs by group (group_sorted_order): then
// `input_order` holds that order, and the matmul must read x[:, input_order] (y = W' . x'). When
// neither works (groups of sizes that are not whole blocks, K not whole blocks), the exact f32
// values in the stored order.
struct RuntimeWeight {
  DType dtype = DType::kF32;
  std::vector<uint8_t> bytes;         // [N, K] in dtype
  std::vector<int32_t> input_order;   // [K], or empty: the stored order
};
RuntimeWeight to_runtime(const GroupedIntWeight& weight);

// Throws FormatError naming `what` unless the codes, zeros, scales and g_idx are in range.
void check_grouped(const GroupedIntWeight& weight, const std::string& what);

}  // namespace lemma::quant
