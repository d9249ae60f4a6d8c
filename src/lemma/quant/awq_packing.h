// AWQ checkpoint tensors (AutoAWQ "gemm" version, quant_method "awq", 4 bits, zero_point true),
// for a Linear with K inputs and N outputs and groups of G inputs:
//   qweight I32 [K, N / 8]       eight 4-bit codes of outputs 8c .. 8c + 7 of input k, packed along
//                                the output dimension in AWQ's order: field i (bits 4i) holds
//                                output 8c + kAwqOrder[i], kAwqOrder = {0, 2, 4, 6, 1, 3, 5, 7}
//   qzeros  I32 [K / G, N / 8]   zero points, same order (stored as they are)
//   scales  F16 [K / G, N]
// value[n, k] = scales[k / G, n] * (code - zero). Pure functions; thread-safe.
#pragma once

#include <array>
#include <string>
#include <vector>

#include "lemma/quant/grouped_int_weight.h"
#include "lemma/tensor/tensor_view.h"

namespace lemma::quant {

inline constexpr std::array<int, 8> kAwqOrder = {0, 2, 4, 6, 1, 3, 5, 7};

struct AwqTensors {
  int64_t in_features = 0, out_features = 0, num_groups = 0;
  std::vector<int32_t> qweight, qzeros;
  std::vector<uint16_t> scales;
};

// Whether a [N, K] weight can be packed: N a multiple of 8, K of the group.
bool awq_fits(int64_t group_size, int64_t out_features, int64_t in_features);
// `weight` must be 4-bit with g_idx = k / group (InvalidArgument otherwise).
AwqTensors pack_awq(const GroupedIntWeight& weight);
// `base` names the tensors in errors; throws FormatError for wrong dtypes or shapes.
GroupedIntWeight unpack_awq(const std::string& base, int64_t group_size, const TensorView& qweight,
                            const TensorView& qzeros, const TensorView& scales);

}  // namespace lemma::quant
