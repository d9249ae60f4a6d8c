// GPTQ checkpoint tensors (AutoGPTQ's "gptq" checkpoint format, the one transformers loads with
// quant_method "gptq"), for a Linear with K inputs and N outputs, pack = 32 / bits values per int32:
//   qweight I32 [K / pack, N]       code of input k in bits (k % pack) * bits of row k / pack
//                                   (packed along the input dimension, low bits first)
//   qzeros  I32 [groups, N / pack]  zero point of output n in bits (n % pack) * bits of column n / pack,
//                                   stored as zero - 1 in each field (v1 format; read back as
//                                   (field + 1) mod 2^bits)
//   scales  F16 [groups, N]
//   g_idx   I32 [K]                 group of each input (act-order: sorted by importance, else k / group)
// value[n, k] = scales[g_idx[k], n] * (code - zero). Pure functions; thread-safe.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "lemma/quant/grouped_int_weight.h"
#include "lemma/tensor/tensor_view.h"

namespace lemma::quant {

struct GptqTensors {
  int64_t in_features = 0, out_features = 0, num_groups = 0;
  int bits = 4;
  std::vector<int32_t> qweight, qzeros, g_idx;
  std::vector<uint16_t> scales;
};

// Whether a [N, K] weight can be packed (K and N multiples of 32 / bits).
bool gptq_fits(int bits, int64_t out_features, int64_t in_features);
// Throws InvalidArgument when !gptq_fits.
GptqTensors pack_gptq(const GroupedIntWeight& weight);

// The four tensors read back (g_idx nullopt: k / group_size, group_size <= 0 meaning one group).
// `base` names the tensors in errors ("<base>.qweight"); throws FormatError for wrong dtypes,
// shapes or values.
GroupedIntWeight unpack_gptq(const std::string& base, int bits, int64_t group_size, const TensorView& qweight,
                             const TensorView& qzeros, const TensorView& scales, const std::optional<TensorView>& g_idx);

}  // namespace lemma::quant
