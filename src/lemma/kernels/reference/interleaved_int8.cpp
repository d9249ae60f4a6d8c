// The oracle for the interleaved Q8_0x16 / Q4_0x16 / Q5_0x16 / Q2_Kx16 .. Q6_Kx16 / IQ4_NLx16 / IQ4_XSx16 kernels (interleaved_blocks.h): reads each
// weight's code out of its superblock and follows the stated order exactly (one f32 accumulator
// per output, blocks in order, fma(d_w * d_x, float(S_b), acc)). Also the quantiser wrapper that
// writes the signed activations. Scalar; no allocation; thread-safe.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "lemma/kernels/float_bits.h"
#include "lemma/kernels/interleaved_blocks.h"
#include "lemma/kernels/lemma_int_blocks.h"
#include "lemma/kernels/q8k_activations.h"
#include "lemma/kernels/quant_blocks.h"
#include "lemma/kernels/reference/lemma_int.h"
#include "lemma/kernels/reference/oracle_loops.h"

namespace lemma::kernels {

namespace {

constexpr int64_t kBlock = 32;

// Row i's signed code of value k (0..31) in a superblock's code bytes.
int code_q8(const uint8_t* codes, int64_t i, int64_t k) { return static_cast<int>(codes[64 * (k / 4) + 4 * i + k % 4]) - 128; }
int code_q4(const uint8_t* codes, int64_t i, int64_t k) {
  const int64_t v = k % 16;
  const uint8_t byte = codes[64 * (v / 4) + 4 * i + v % 4];
  return (k < 16 ? byte & 0x0F : byte >> 4) - 8;
}

int code_iq4(const uint8_t* codes, int64_t i, int64_t k) { return kIq4Values[code_q4(codes, i, k) + 8]; }

int code_q5(const uint8_t* codes, int64_t i, int64_t k) {
  uint64_t mask;
  std::memcpy(&mask, codes + 4 * 64 + 8 * (k / 4), 8);
  const int high = static_cast<int>((mask >> (4 * i + k % 4)) & 1u) << 4;
  return code_q4(codes, i, k) + 8 + high - 16;
}

// Row i's u - z of value k in an I8Z32x16 / I4Z32x16 superblock (the whole superblock).
int code_intz(bool int8, const uint8_t* super, int64_t i, int64_t k) {
  const uint8_t* codes = super + IntZx16Layout::kCodesAt;
  const int z = super[IntZx16Layout::kZerosAt + i];
  if (int8) return static_cast<int>(codes[64 * (k / 4) + 4 * i + k % 4]) - z;
  const int64_t v = k % 16;
  const uint8_t byte = codes[64 * (v / 4) + 4 * i + v % 4];
  return (k < 16 ? byte & 0x0F : byte >> 4) - z;
}

// Q4_1x16 / Q5_1x16 (kMins): S_b sums u q_x (u unsigned, codes after d and m), then the min term
// with x's block code sum.
template <DType Plain>
void matmul_interleaved(const MatmulArgs& a) {
  constexpr bool kMins = Plain == DType::kQ4_1 || Plain == DType::kQ5_1;
  const int64_t blocks = a.K / kBlock;
  const int64_t super_bytes = kInterleaveRows * static_cast<int64_t>(dtype_info(Plain).block_bytes);
  oracle::for_each_group_block(a, blocks, blocks * super_bytes, [&](float acc, const uint8_t* group, int64_t i, int64_t m, int64_t b) {
    const Int8SignedRow x = int8_signed_row(a.xq, a.K, m);
    const uint8_t* super = group + b * super_bytes;
    uint16_t d_bits;
    std::memcpy(&d_bits, super + 2 * i, 2);
    int32_t sum = 0;
    for (int64_t k = 0; k < kBlock; ++k) {
      const int q = Plain == DType::kQ8_0    ? code_q8(super + 32, i, k)
                    : Plain == DType::kQ4_0  ? code_q4(super + 32, i, k)
                    : Plain == DType::kQ5_0  ? code_q5(super + 32, i, k)
                    : Plain == DType::kIQ4_NL ? code_iq4(super + 32, i, k)
                    : Plain == DType::kQ4_1  ? code_q4(super + 64, i, k) + 8
                    : Plain == DType::kQ5_1  ? code_q5(super + 64, i, k) + 16
                    : Plain == DType::kI8Z32 ? code_intz(true, super, i, k)
                                             : code_intz(false, super, i, k);
      sum += q * x.codes[b * kBlock + k];
    }
    acc = std::fma(f16_to_f32(d_bits) * x.scales[b], static_cast<float>(sum), acc);
    if constexpr (kMins) {
      uint16_t m_bits;
      std::memcpy(&m_bits, super + 32 + 2 * i, 2);
      acc = std::fma(f16_to_f32(m_bits) * x.scales[b], static_cast<float>(x.sums[b]), acc);
    }
    return acc;
  });
}

// IQ4_XSx16 (interleaved_blocks.h): Q8_0x16's activations and loop, dw = f32(d) * (ls - 32) per
// 32-value sub-block.
void matmul_iq4_xsx16(const MatmulArgs& a) {
  using L = Iq4XsX16Layout;
  const int64_t blocks = a.K / kBlock;
  oracle::for_each_group_block(a, blocks, (blocks / 8) * L::kSuperBytes, [&](float acc, const uint8_t* group, int64_t i, int64_t m, int64_t b) {
    const uint8_t* super = group + b / 8 * L::kSuperBytes;
    uint16_t d_bits, scales_h;
    std::memcpy(&d_bits, super + 2 * i, 2);
    std::memcpy(&scales_h, super + L::kScalesHighAt + 2 * i, 2);
    const int scale = iq4_xs_scale(scales_h, super + L::kScalesLowAt + 4 * i, static_cast<int>(b % 8));  // ls - 32
    const uint8_t* codes = super + L::kCodesAt + L::kSubBlockBytes * (b % 8);
    const int8_t* x = int8_signed_codes(a.xq, a.K, m) + b * kBlock;
    int32_t sum = 0;
    for (int64_t k = 0; k < kBlock; ++k) sum += code_iq4(codes, i, k) * x[k];
    const float dw = f16_to_f32(d_bits) * static_cast<float>(scale);
    return std::fma(dw * int8_signed_scales(a.xq, a.K, m)[b], static_cast<float>(sum), acc);
  });
}

// The loops the K-quant oracles share: per output one f32 accumulator from +0, then for each
// 256-value block in order acc = update(acc, superblock, row i in the group, x's codes / scale / 16-value
// sums for the block); y = acc (+ bias).
template <typename Update>
void matmul_kx16(const MatmulArgs& a, int64_t super_bytes, Update update) {
  constexpr int64_t kValues = 256;
  const int64_t blocks = a.K / kValues;
  oracle::for_each_group_block(a, blocks, blocks * super_bytes, [&](float acc, const uint8_t* group, int64_t i, int64_t m, int64_t b) {
    const Q8kRows<1> x(a.xq, a.K, m);
    return update(acc, group + b * super_bytes, i, x.codes[0] + b * kValues, x.scales[0][b], x.sums[0] + b * 16);
  });
}

// Q4_Kx16 and Q5_Kx16 (kFifthBit; interleaved_blocks.h): the stated order, exactly.
template <bool kFifthBit>
void matmul_q45_kx16(const MatmulArgs& a) {
  matmul_kx16(a, kInterleaveRows * (kFifthBit ? 176 : 144), [](float acc, const uint8_t* super, int64_t i, const int8_t* x, float dx, const int16_t* sums) {
    uint16_t d_bits, dmin_bits;
    std::memcpy(&d_bits, super + 2 * i, 2);
    std::memcpy(&dmin_bits, super + 32 + 2 * i, 2);
    uint8_t packed[12], sc[8], mn[8];
    for (int64_t w = 0; w < 3; ++w) std::memcpy(packed + 4 * w, super + 64 + 64 * w + 4 * i, 4);
    unpack_k4_scales(packed, sc, mn);
    int32_t S = 0, N = 0;
    for (int64_t j = 0; j < 8; ++j) {
      int32_t Sj = 0;
      for (int64_t v = 32 * j; v < 32 * j + 32; ++v) {  // value v: chunk 8 (v / 64) + (v % 32) / 4
        const uint8_t byte = super[256 + 64 * (8 * (v / 64) + (v % 32) / 4) + 4 * i + v % 4];
        int u = (v % 64) < 32 ? byte & 0x0F : byte >> 4;
        if constexpr (kFifthBit) {  // mask 16 c + 8 h + p, bit 4 i + t (v = 64 c + 32 h + 4 p + t)
          uint64_t mask;
          std::memcpy(&mask, super + 2304 + 8 * (16 * (v / 64) + 8 * (v % 64 / 32) + v % 32 / 4), 8);
          u |= static_cast<int>((mask >> (4 * i + v % 4)) & 1u) << 4;
        }
        Sj += u * x[v];
      }
      S += sc[j] * Sj;
      N += mn[j] * (sums[2 * j] + sums[2 * j + 1]);
    }
    acc = std::fma(f16_to_f32(d_bits) * dx, static_cast<float>(S), acc);
    return std::fma(-(f16_to_f32(dmin_bits) * dx), static_cast<float>(N), acc);
  });
}

// Q2_Kx16 and Q3_Kx16 (kQ3; interleaved_blocks.h): the stated order, exactly.
template <bool kQ3>
void matmul_q23_kx16(const MatmulArgs& a) {
  matmul_kx16(a, kInterleaveRows * (kQ3 ? 110 : 84), [](float acc, const uint8_t* super, int64_t i, const int8_t* x, float dx, const int16_t* sums) {
    const int64_t scales_at = kQ3 ? 32 : 64, codes_at = kQ3 ? 224 : 320;
    const auto row_byte = [&](int64_t at, int64_t k) { return super[at + 64 * (k / 4) + 4 * i + k % 4]; };
    uint8_t packed[16];
    for (int64_t k = 0; k < (kQ3 ? 12 : 16); ++k) packed[k] = row_byte(scales_at, k);
    int32_t S = 0, N = 0;
    for (int64_t j = 0; j < 16; ++j) {
      int32_t Sj = 0;
      for (int64_t v = 16 * j; v < 16 * j + 16; ++v) {  // value v = 32 c + l: field c % 4 of qs[32 (c / 4) + l]
        const int64_t c = v / 32, l = v % 32;
        int u = (row_byte(codes_at, 32 * (c / 4) + l) >> (2 * (c % 4))) & 3;
        if constexpr (kQ3) {
          uint64_t mask;  // mask 8 c + l / 4, bit 4 i + l % 4
          std::memcpy(&mask, super + 1248 + 8 * (8 * c + l / 4), 8);
          u |= static_cast<int>((mask >> (4 * i + l % 4)) & 1u) << 2;
          u -= 4;
        }
        Sj += u * x[v];
      }
      if constexpr (kQ3) {
        S += unpack_k3_scale(packed, static_cast<int>(j)) * Sj;
      } else {
        S += (packed[j] & 0x0F) * Sj;
        N += (packed[j] >> 4) * sums[j];
      }
    }
    uint16_t d_bits;
    std::memcpy(&d_bits, super + 2 * i, 2);
    acc = std::fma(f16_to_f32(d_bits) * dx, static_cast<float>(S), acc);
    if constexpr (!kQ3) {
      uint16_t dmin_bits;
      std::memcpy(&dmin_bits, super + 32 + 2 * i, 2);
      acc = std::fma(-(f16_to_f32(dmin_bits) * dx), static_cast<float>(N), acc);
    }
    return acc;
  });
}

// Q6_Kx16 (interleaved_blocks.h): the stated order, exactly.
void matmul_q6_kx16(const MatmulArgs& a) {
  matmul_kx16(a, kInterleaveRows * 210, [](float acc, const uint8_t* super, int64_t i, const int8_t* x, float dx, const int16_t*) {
    uint16_t d_bits;
    std::memcpy(&d_bits, super + 2 * i, 2);
    // Row i's file bytes ql[k] and qh[k] (k < 128 and < 64) and scale j.
    const auto ql = [&](int64_t k) { return super[288 + 64 * (k / 4) + 4 * i + k % 4]; };
    const auto qh = [&](int64_t k) { return super[2336 + 64 * (k / 4) + 4 * i + k % 4]; };
    const auto sc = [&](int64_t j) { return static_cast<int8_t>(super[32 + 64 * (j / 4) + 4 * i + j % 4]); };
    int32_t S = 0;
    for (int64_t j = 0; j < 16; ++j) {
      int32_t Sj = 0;
      for (int64_t v = 16 * j; v < 16 * j + 16; ++v) {  // value v: half h, quarter k (of 32), l
        const int64_t h = v / 128, k = (v % 128) / 32, l = v % 32;
        const uint8_t low = ql(64 * h + 32 * (k % 2) + l);
        const int u = (k < 2 ? low & 0x0F : low >> 4) | (((qh(32 * h + l) >> (2 * k)) & 3) << 4);
        Sj += (u - 32) * x[v];
      }
      S += sc(j) * Sj;
    }
    return std::fma(f16_to_f32(d_bits) * dx, static_cast<float>(S), acc);
  });
}

}  // namespace

void quantize_signed_activations_reference(const float* x, int64_t x_stride, int64_t M, int64_t K, void* out) {
  // Each row's record starts with the unsigned layout's codes and scales (int8_activations.h).
  for (int64_t m = 0; m < M; ++m)
    quantize_activations_reference(x + m * x_stride, x_stride, 1, K, static_cast<uint8_t*>(out) + m * int8_signed_row_bytes(K));
  make_int8_activations_signed(M, K, out);
}

void matmul_q8_0x16_int8_reference(const MatmulArgs& args) { matmul_interleaved<DType::kQ8_0>(args); }
void matmul_q4_0x16_int8_reference(const MatmulArgs& args) { matmul_interleaved<DType::kQ4_0>(args); }
void matmul_i8z32x16_int8_reference(const MatmulArgs& args) { matmul_interleaved<DType::kI8Z32>(args); }

void quantize_w8a8_signed_activations_reference(const float* x, int64_t x_stride, int64_t M, int64_t K, void* out) {
  const int64_t blocks = K / kBlock;
  for (int64_t m = 0; m < M; ++m) {
    const float* row = x + m * x_stride;
    float amax = 0.0f;
    for (int64_t k = 0; k < K; ++k) amax = std::max(amax, std::fabs(row[k]));
    const float id = amax > 0.0f ? 127.0f / amax : 0.0f;
    auto* codes = const_cast<int8_t*>(int8_signed_codes(out, K, m));
    auto* scales = const_cast<float*>(int8_signed_scales(out, K, m));
    auto* sums = const_cast<int32_t*>(int8_block_sums(out, K, m));
    for (int64_t b = 0; b < int8_scales_stride(K); ++b) {
      int32_t sum = 0;
      for (int64_t k = b * kBlock; k < (b + 1) * kBlock && b < blocks; ++k) {
        const int q = std::clamp(static_cast<int>(std::nearbyint(row[k] * id)), -127, 127);
        codes[k] = static_cast<int8_t>(q);
        sum += q;
      }
      scales[b] = amax / 127.0f;
      sums[b] = sum;
    }
    for (int64_t k = K; k < int8_codes_stride(K); ++k) codes[k] = 0;
  }
}

void matmul_w8a8x16_reference(const MatmulArgs& a) {
  if (a.K > kW8A8MaxK) return write_nan_outputs(a);
  const int64_t blocks = a.K / kBlock;
  const int64_t super_bytes = kInterleaveRows * 34;
  oracle::for_each_output(a, [&](int64_t m, int64_t n) {
    const int8_t* x = int8_signed_codes(a.xq, a.K, m);
    const auto* group = static_cast<const uint8_t*>(a.w) + n / kInterleaveRows * blocks * super_bytes;
    const int64_t i = n % kInterleaveRows;
    int32_t sum = 0;
    for (int64_t b = 0; b < blocks; ++b)
      for (int64_t k = 0; k < kBlock; ++k) sum += code_q8(group + b * super_bytes + 32, i, k) * x[b * kBlock + k];
    uint16_t d_bits;
    std::memcpy(&d_bits, group + 2 * i, 2);
    return static_cast<float>(sum) * (int8_signed_scales(a.xq, a.K, m)[0] * f16_to_f32(d_bits));
  });
}
void matmul_i4z32x16_int8_reference(const MatmulArgs& args) { matmul_interleaved<DType::kI4Z32>(args); }
void matmul_q5_0x16_int8_reference(const MatmulArgs& args) { matmul_interleaved<DType::kQ5_0>(args); }
void matmul_iq4_nlx16_int8_reference(const MatmulArgs& args) { matmul_interleaved<DType::kIQ4_NL>(args); }
void matmul_iq4_xsx16_int8_reference(const MatmulArgs& args) { matmul_iq4_xsx16(args); }
void matmul_q4_1x16_int8_reference(const MatmulArgs& args) { matmul_interleaved<DType::kQ4_1>(args); }
void matmul_q5_1x16_int8_reference(const MatmulArgs& args) { matmul_interleaved<DType::kQ5_1>(args); }
void matmul_q2_kx16_int8_reference(const MatmulArgs& args) { matmul_q23_kx16<false>(args); }
void matmul_q3_kx16_int8_reference(const MatmulArgs& args) { matmul_q23_kx16<true>(args); }
void matmul_q4_kx16_int8_reference(const MatmulArgs& args) { matmul_q45_kx16<false>(args); }
void matmul_q5_kx16_int8_reference(const MatmulArgs& args) { matmul_q45_kx16<true>(args); }
void matmul_q6_kx16_int8_reference(const MatmulArgs& args) { matmul_q6_kx16(args); }

}  // namespace lemma::kernels
