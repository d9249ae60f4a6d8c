// Scalar oracles for the K-quant int8-activation matmul (q8k_activations.h): the quantiser and the
// Q4_K/Q5_K/Q6_K/Q2_K/Q3_K block dot products, written as the plain loops the layout comment describes. The
// SIMD kernels must give these bits.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "lemma/kernels/float_bits.h"
#include "lemma/kernels/q8k_activations.h"
#include "lemma/kernels/quant_blocks.h"
#include "lemma/kernels/reference/lemma_int.h"
#include "lemma/kernels/reference/oracle_loops.h"
#include "lemma/tensor/dtype.h"

namespace lemma::kernels {

namespace {

constexpr int kBlock = static_cast<int>(kQ8KBlock);

// One weight super-block as the rule reads it: unsigned codes u (value ~ u - offset), 16 groups of
// 16 values with integer scales and mins (a 32-value scale or min counts for both its halves).
struct KBlock {
  float d = 0.0f;
  float dmin = 0.0f;  // with mins only (Q4_K, Q5_K, Q2_K)
  int offset = 0;     // Q6_K 32, Q3_K 4
  bool has_mins = false;
  int u[kBlock];
  int sc[16];
  int mn[16];
};

template <DType T>
KBlock weight_block(const uint8_t* row, int64_t b) {
  KBlock w{};
  if constexpr (T == DType::kQ4_K || T == DType::kQ5_K) {
    using Block = std::conditional_t<T == DType::kQ4_K, BlockQ4_K, BlockQ5_K>;
    Block block;
    std::memcpy(&block, row + b * static_cast<int64_t>(sizeof(block)), sizeof(block));
    w.d = f16_to_f32(block.d);
    w.dmin = f16_to_f32(block.dmin);
    w.has_mins = true;
    uint8_t sc[8], mn[8];
    unpack_k4_scales(block.scales, sc, mn);
    for (int g = 0; g < 16; ++g) {
      w.sc[g] = sc[g / 2];
      w.mn[g] = mn[g / 2];
    }
    for (int k = 0; k < 4; ++k) {  // 32 bytes of qs: values 64k + i (low nibble), 64k + 32 + i (high)
      for (int i = 0; i < 32; ++i) {
        int lo = block.qs[32 * k + i] & 0x0F, hi = block.qs[32 * k + i] >> 4;
        if constexpr (T == DType::kQ5_K) {
          lo |= ((block.qh[i] >> (2 * k)) & 1) << 4;
          hi |= ((block.qh[i] >> (2 * k + 1)) & 1) << 4;
        }
        w.u[64 * k + i] = lo;
        w.u[64 * k + 32 + i] = hi;
      }
    }
  } else if constexpr (T == DType::kQ6_K) {
    BlockQ6_K block;
    std::memcpy(&block, row + b * static_cast<int64_t>(sizeof(block)), sizeof(block));
    w.d = f16_to_f32(block.d);
    w.offset = 32;
    for (int g = 0; g < 16; ++g) w.sc[g] = block.scales[g];
    for (int h = 0; h < 2; ++h) {  // halves of 128: byte l feeds values l, l + 32, l + 64, l + 96
      const uint8_t* ql = block.ql + 64 * h;
      const uint8_t* qh = block.qh + 32 * h;
      int* u = w.u + 128 * h;
      for (int l = 0; l < 32; ++l) {
        u[l] = (ql[l] & 0x0F) | (((qh[l] >> 0) & 3) << 4);
        u[l + 32] = (ql[l + 32] & 0x0F) | (((qh[l] >> 2) & 3) << 4);
        u[l + 64] = (ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4);
        u[l + 96] = (ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4);
      }
    }
  } else {
    static_assert(T == DType::kQ2_K || T == DType::kQ3_K);
    using Block = std::conditional_t<T == DType::kQ2_K, BlockQ2_K, BlockQ3_K>;
    Block block;
    std::memcpy(&block, row + b * static_cast<int64_t>(sizeof(block)), sizeof(block));
    w.d = f16_to_f32(block.d);
    if constexpr (T == DType::kQ2_K) {
      w.dmin = f16_to_f32(block.dmin);
      w.has_mins = true;
      for (int g = 0; g < 16; ++g) {
        w.sc[g] = block.scales[g] & 0x0F;
        w.mn[g] = block.scales[g] >> 4;
      }
    } else {
      w.offset = 4;
      for (int g = 0; g < 16; ++g) w.sc[g] = unpack_k3_scale(block.scales, g);
    }
    // Chunk c = 4h + f: bits 2f of qs[32h + l] (and, Q3_K, bit c of hmask[l]) for value 32c + l.
    for (int c = 0; c < 8; ++c) {
      for (int l = 0; l < 32; ++l) {
        int u = (block.qs[32 * (c / 4) + l] >> (2 * (c % 4))) & 3;
        if constexpr (T == DType::kQ3_K) u |= ((block.hmask[l] >> c) & 1) << 2;
        w.u[32 * c + l] = u;
      }
    }
  }
  return w;
}

template <DType T>
void matmul_q8k(const MatmulArgs& a) {
  const int64_t blocks = a.K / kBlock;
  oracle::for_each_output(a, [&](int64_t m, int64_t n) {
    const Q8kRows<1> x(a.xq, a.K, m);
    const auto* row = static_cast<const uint8_t*>(a.w) + n * a.w_row_bytes;
    float acc[8] = {};
    for (int64_t b = 0; b < blocks; ++b) {
      const KBlock w = weight_block<T>(row, b);
      const int8_t* q = x.codes[0] + b * kBlock;
      const int16_t* s = x.sums[0] + b * (kBlock / kQ8KGroup);
      const float dx = x.scales[0][b];
      for (int l = 0; l < 8; ++l) {
        int32_t S = 0;
        for (int c = 0; c < 8; ++c) {  // the 32-value chunks
          int32_t dot = 0;
          for (int t = 32 * c + 4 * l; t < 32 * c + 4 * l + 4; ++t) dot += (w.u[t] - w.offset) * q[t];
          S += w.sc[2 * c + l / 4] * dot;
        }
        acc[l] = std::fma(w.d * dx, static_cast<float>(S), acc[l]);
        if (w.has_mins) {
          const int32_t N = w.mn[2 * l] * s[2 * l] + w.mn[2 * l + 1] * s[2 * l + 1];
          acc[l] = std::fma(-(w.dmin * dx), static_cast<float>(N), acc[l]);
        }
      }
    }
    return oracle::tree_sum8(acc);
  });
}

}  // namespace

void quantize_q8k_activations_reference(const float* x, int64_t x_stride, int64_t M, int64_t K, void* out) {
  oracle::quantise_blocks<kBlock>(x, x_stride, M, K, [&](int64_t m, int64_t b, const int8_t* q, const oracle::QuantisedBlock& block) {
    std::copy(q, q + kBlock, const_cast<int8_t*>(q8k_codes(out, K, m)) + b * kBlock);
    int16_t* sums = const_cast<int16_t*>(q8k_sums(out, K, m)) + b * (kBlock / kQ8KGroup);
    for (int g = 0; g < kBlock / kQ8KGroup; ++g) {
      int sum = 0;
      for (int j = 0; j < kQ8KGroup; ++j) sum += q[kQ8KGroup * g + j];
      sums[g] = static_cast<int16_t>(sum);
    }
    const float d = block.amax != 0.0f ? 1.0f / block.id : 0.0f;
    const_cast<float*>(q8k_scales(out, K, m))[b] = block.has_nan ? std::numeric_limits<float>::quiet_NaN() : d;
  });
  for (int64_t m = 0; m < M; ++m) {  // padding: codes, scales and sums 0
    std::memset(const_cast<int8_t*>(q8k_codes(out, K, m)) + K, 0, static_cast<size_t>(q8k_codes_stride(K) - K));
    auto* scales = const_cast<float*>(q8k_scales(out, K, m));
    std::fill(scales + K / kBlock, scales + q8k_scales_stride(K), 0.0f);
    auto* sums = const_cast<int16_t*>(q8k_sums(out, K, m));
    std::fill(sums + K / kQ8KGroup, sums + q8k_sums_stride(K), int16_t{0});
  }
}

void matmul_q4_k_int8_reference(const MatmulArgs& a) { matmul_q8k<DType::kQ4_K>(a); }
void matmul_q5_k_int8_reference(const MatmulArgs& a) { matmul_q8k<DType::kQ5_K>(a); }
void matmul_q6_k_int8_reference(const MatmulArgs& a) { matmul_q8k<DType::kQ6_K>(a); }
void matmul_q2_k_int8_reference(const MatmulArgs& a) { matmul_q8k<DType::kQ2_K>(a); }
void matmul_q3_k_int8_reference(const MatmulArgs& a) { matmul_q8k<DType::kQ3_K>(a); }

}  // namespace lemma::kernels
