#include "lemma/quant/gptq_packing.h"

#include <algorithm>
#include <cstring>

#include "lemma/base/error.h"

namespace lemma::quant {

namespace {

void expect(const std::string& name, const TensorView& v, DType dtype, int64_t rows, int64_t cols) {
  if (v.dtype != dtype || v.shape.rank != 2 || v.shape[0] != rows || v.shape[1] != cols)
    fail<FormatError>("GPTQ tensor {}: {} {}, expected {} [{}, {}]", name, dtype_name(v.dtype), v.shape.to_string(),
                      dtype_name(dtype), rows, cols);
}

uint32_t word(const TensorView& v, int64_t i) {
  uint32_t w;
  std::memcpy(&w, v.bytes_ptr() + 4 * i, 4);
  return w;
}

}  // namespace

bool gptq_fits(int bits, int64_t N, int64_t K) {
  const int pack = 32 / bits;
  return (bits == 4 || bits == 8) && N > 0 && K > 0 && N % pack == 0 && K % pack == 0;
}

GptqTensors pack_gptq(const GroupedIntWeight& w) {
  const int64_t N = w.out_features, K = w.in_features;
  if (!gptq_fits(w.bits, N, K)) fail<InvalidArgument>("a [{}, {}] weight does not pack as {}-bit GPTQ", N, K, w.bits);
  const int pack = 32 / w.bits;
  const uint32_t mask = (1u << w.bits) - 1;
  GptqTensors t;
  t.in_features = K;
  t.out_features = N;
  t.num_groups = w.num_groups;
  t.bits = w.bits;
  t.qweight.assign(static_cast<size_t>(K / pack * N), 0);
  for (int64_t k = 0; k < K; ++k)
    for (int64_t n = 0; n < N; ++n) {
      const uint32_t code = w.codes[static_cast<size_t>(n * K + k)];
      auto& dst = t.qweight[static_cast<size_t>((k / pack) * N + n)];
      dst = static_cast<int32_t>(static_cast<uint32_t>(dst) | code << (w.bits * (k % pack)));
    }
  t.qzeros.assign(static_cast<size_t>(w.num_groups * (N / pack)), 0);
  for (int64_t g = 0; g < w.num_groups; ++g)
    for (int64_t n = 0; n < N; ++n) {
      const uint32_t stored = (static_cast<uint32_t>(w.zeros[static_cast<size_t>(g * N + n)]) - 1u) & mask;
      auto& dst = t.qzeros[static_cast<size_t>(g * (N / pack) + n / pack)];
      dst = static_cast<int32_t>(static_cast<uint32_t>(dst) | stored << (w.bits * (n % pack)));
    }
  t.scales = w.scales;
  t.g_idx = w.g_idx;
  return t;
}

GroupedIntWeight unpack_gptq(const std::string& base, int bits, int64_t group_size, const TensorView& qweight,
                             const TensorView& qzeros, const TensorView& scales, const std::optional<TensorView>& g_idx) {
  if (bits != 4 && bits != 8) fail<FormatError>("GPTQ weight {}: bits {} is not supported (4 or 8)", base, bits);
  const int pack = 32 / bits;
  if (qweight.dtype != DType::kI32 || qweight.shape.rank != 2)
    fail<FormatError>("GPTQ tensor {}.qweight: {} {}, expected I32 [K / {}, N]", base, dtype_name(qweight.dtype),
                      qweight.shape.to_string(), pack);
  if (scales.shape.rank != 2) fail<FormatError>("GPTQ tensor {}.scales: {}, expected [groups, N]", base, scales.shape.to_string());
  GroupedIntWeight w;
  w.bits = bits;
  w.in_features = qweight.shape[0] * pack;
  w.out_features = qweight.shape[1];
  w.num_groups = scales.shape[0];
  const int64_t N = w.out_features, K = w.in_features;
  if (N % pack != 0) fail<FormatError>("GPTQ tensor {}.qweight: {} outputs is not a multiple of {}", base, N, pack);
  expect(base + ".scales", scales, DType::kF16, w.num_groups, N);
  expect(base + ".qzeros", qzeros, DType::kI32, w.num_groups, N / pack);
  if (g_idx) {
    if (g_idx->dtype != DType::kI32 || g_idx->shape.rank != 1 || g_idx->shape[0] != K)
      fail<FormatError>("GPTQ tensor {}.g_idx: {} {}, expected I32 [{}]", base, dtype_name(g_idx->dtype),
                        g_idx->shape.to_string(), K);
    w.g_idx.resize(static_cast<size_t>(K));
    std::memcpy(w.g_idx.data(), g_idx->data, static_cast<size_t>(K) * 4);
  } else {
    const int64_t g = group_size <= 0 ? K : group_size;
    if ((K + g - 1) / g != w.num_groups)
      fail<FormatError>("GPTQ tensor {}.scales: {} groups, but {} inputs in groups of {} make {}", base, w.num_groups, K,
                        g, (K + g - 1) / g);
    for (int64_t k = 0; k < K; ++k) w.g_idx.push_back(static_cast<int32_t>(k / g));
  }
  const uint32_t mask = (1u << bits) - 1;
  w.codes.resize(static_cast<size_t>(N * K));
  for (int64_t k = 0; k < K; ++k)
    for (int64_t n = 0; n < N; ++n)
      w.codes[static_cast<size_t>(n * K + k)] =
          static_cast<uint8_t>((word(qweight, (k / pack) * N + n) >> (bits * (k % pack))) & mask);
  w.zeros.resize(static_cast<size_t>(w.num_groups * N));
  for (int64_t g = 0; g < w.num_groups; ++g)
    for (int64_t n = 0; n < N; ++n)
      w.zeros[static_cast<size_t>(g * N + n)] = static_cast<uint8_t>(
          ((word(qzeros, g * (N / pack) + n / pack) >> (bits * (n % pack))) + 1u) & mask);
  w.scales.resize(static_cast<size_t>(w.num_groups * N));
  std::memcpy(w.scales.data(), scales.data, w.scales.size() * 2);
  check_grouped(w, "GPTQ weight " + base);
  return w;
}

}  // namespace lemma::quant
