#include "lemma/quant/awq_packing.h"

#include <cstring>

#include "lemma/base/error.h"

namespace lemma::quant {

namespace {

void expect(const std::string& name, const TensorView& v, DType dtype, int64_t rows, int64_t cols) {
  if (v.dtype != dtype || v.shape.rank != 2 || v.shape[0] != rows || v.shape[1] != cols)
    fail<FormatError>("AWQ tensor {}: {} {}, expected {} [{}, {}]", name, dtype_name(v.dtype), v.shape.to_string(),
                      dtype_name(dtype), rows, cols);
}

// Packs row r of a [rows, N] code table into N / 8 words in AWQ's order.
template <typename Get>
void pack_row(int64_t N, Get get, int32_t* out) {
  for (int64_t c = 0; c < N / 8; ++c) {
    uint32_t v = 0;
    for (int i = 0; i < 8; ++i) v |= static_cast<uint32_t>(get(8 * c + kAwqOrder[static_cast<size_t>(i)])) << (4 * i);
    out[c] = static_cast<int32_t>(v);
  }
}

// Output n's field of a packed row.
uint8_t field(const TensorView& v, int64_t row, int64_t N, int64_t n) {
  static constexpr std::array<int, 8> kReverse = [] {
    std::array<int, 8> r{};
    for (int i = 0; i < 8; ++i) r[static_cast<size_t>(kAwqOrder[static_cast<size_t>(i)])] = i;
    return r;
  }();
  uint32_t w;
  std::memcpy(&w, v.bytes_ptr() + 4 * (row * (N / 8) + n / 8), 4);
  return static_cast<uint8_t>((w >> (4 * kReverse[static_cast<size_t>(n % 8)])) & 0xF);
}

}  // namespace

bool awq_fits(int64_t group_size, int64_t N, int64_t K) {
  return group_size > 0 && N > 0 && K > 0 && N % 8 == 0 && K % group_size == 0;
}

AwqTensors pack_awq(const GroupedIntWeight& w) {
  const int64_t N = w.out_features, K = w.in_features;
  const int64_t G = w.num_groups > 0 ? K / w.num_groups : 0;
  bool contiguous = w.bits == 4 && G > 0 && K % w.num_groups == 0 && awq_fits(G, N, K);
  for (int64_t k = 0; contiguous && k < K; ++k) contiguous = w.g_idx[static_cast<size_t>(k)] == k / G;
  if (!contiguous) fail<InvalidArgument>("a [{}, {}] {}-bit weight in {} groups does not pack as AWQ", N, K, w.bits, w.num_groups);
  AwqTensors t;
  t.in_features = K;
  t.out_features = N;
  t.num_groups = w.num_groups;
  t.qweight.resize(static_cast<size_t>(K * (N / 8)));
  for (int64_t k = 0; k < K; ++k)
    pack_row(N, [&](int64_t n) { return w.codes[static_cast<size_t>(n * K + k)]; }, t.qweight.data() + k * (N / 8));
  t.qzeros.resize(static_cast<size_t>(w.num_groups * (N / 8)));
  for (int64_t g = 0; g < w.num_groups; ++g)
    pack_row(N, [&](int64_t n) { return w.zeros[static_cast<size_t>(g * N + n)]; }, t.qzeros.data() + g * (N / 8));
  t.scales = w.scales;
  return t;
}

GroupedIntWeight unpack_awq(const std::string& base, int64_t group_size, const TensorView& qweight,
                            const TensorView& qzeros, const TensorView& scales) {
  if (qweight.dtype != DType::kI32 || qweight.shape.rank != 2)
    fail<FormatError>("AWQ tensor {}.qweight: {} {}, expected I32 [K, N / 8]", base, dtype_name(qweight.dtype),
                      qweight.shape.to_string());
  GroupedIntWeight w;
  w.bits = 4;
  w.in_features = qweight.shape[0];
  w.out_features = qweight.shape[1] * 8;
  const int64_t N = w.out_features, K = w.in_features;
  if (group_size <= 0 || K % group_size != 0)
    fail<FormatError>("AWQ weight {}: {} inputs do not fill groups of {}", base, K, group_size);
  w.num_groups = K / group_size;
  expect(base + ".scales", scales, DType::kF16, w.num_groups, N);
  expect(base + ".qzeros", qzeros, DType::kI32, w.num_groups, N / 8);
  w.codes.resize(static_cast<size_t>(N * K));
  for (int64_t k = 0; k < K; ++k)
    for (int64_t n = 0; n < N; ++n) w.codes[static_cast<size_t>(n * K + k)] = field(qweight, k, N, n);
  w.zeros.resize(static_cast<size_t>(w.num_groups * N));
  for (int64_t g = 0; g < w.num_groups; ++g)
    for (int64_t n = 0; n < N; ++n) w.zeros[static_cast<size_t>(g * N + n)] = field(qzeros, g, N, n);
  w.scales.resize(static_cast<size_t>(w.num_groups * N));
  std::memcpy(w.scales.data(), scales.data, w.scales.size() * 2);
  for (int64_t k = 0; k < K; ++k) w.g_idx.push_back(static_cast<int32_t>(k / group_size));
  return w;
}

}  // namespace lemma::quant
