// GGUF Q8_0 / Q4_0 / Q5_0 / Q4_1 / Q5_1 / Q2_K..Q6_K / IQ4_NL / IQ4_XS, lemma int8 / int4 with zero points and
// bf16 / f16 weights with 16 rows interleaved (a view's RowLayout::kInterleaved16 over the file's
// dtype; named q8_0x16 .. bf16x16 by matrix_format.h), and the signed int8 activations their kernels read. Why: in GGUF order a row's 32-value block is one scale and 32
// codes, so an int8 dot product must convert, scale and add per block *per row* (4 vector ops for
// 64 multiply-adds). With 16 rows side by side, one vpdpbusd multiplies 4 values of 16 rows, and the
// convert/scale/add runs once per block for 16 outputs: about 3x fewer instructions per byte of W.
// Model re-lays Q8_0/Q4_0/Q5_0 matrices into this form once at load (model/interleaved_weights.h); the
// codes and f16 scales are the file's, bit for bit.
//
// Layout of a [N, K] matrix (K a multiple of 32): ceil(N / 16) groups of 16 rows, one after the
// other; rows past N are padding (zero scales, zero-value codes). A group holds, for each block b of
// 32 values in order, a superblock of 16 * 34 (Q8_0), 16 * 18 (Q4_0) or 16 * 22 (Q5_0) bytes:
//   bytes 0..31: the 16 rows' f16 scales d (row i at 2 i);
//   Q8_0x16: 8 chunks of 64 bytes; chunk j, bytes 4 i .. 4 i + 3 = row i's codes of values
//            4 j .. 4 j + 3, as unsigned bytes q + 128 (vpdpbusd's unsigned operand);
//   Q4_0x16: 4 chunks of 64 bytes; chunk p, byte 4 i + t = row i's byte 4 p + t of the GGUF block:
//            low nibble = value 4 p + t, high nibble = value 16 + 4 p + t, codes u = q + 8 (0..15).
//   Q5_0x16: the same 4 chunks of nibbles, then 8 little-endian 64-bit masks: mask j, bit 4 i + t =
//            the high (fifth) bit of row i's value 4 j + t; codes u = q + 16 (0..31).
// Q4_1x16 / Q5_1x16 (GGUF Q4_1 / Q5_1: value = d u + m, u unsigned): 16 * 20 / 16 * 24 bytes per
//   block: bytes 0..31 d, 32..63 m (f16, row i at 32 + 2 i), then Q4_0x16's / Q5_0x16's code chunks
//   (and masks) from byte 64, u as it is (0..15 / 0..31). Activations as Q8_0x16's. The dot product:
//   per block b in order, acc = fma(f32(d) * d_x, float(S_b), acc), S_b = exact int32 sum of u q_x,
//   then acc = fma(f32(m) * d_x, float(s_b), acc), s_b = x's block code sum; y = acc (+ bias).
// So group g starts 16 * g * row_bytes into the buffer (row_bytes = dtype_bytes(K), the plain
// format's): a row range that starts on a group edge is a valid view, as for every other dtype.
//
// Q4_Kx16 (GGUF Q4_K, 256-value blocks): the same idea with a superblock of 16 * 144 bytes per block:
//   bytes 0..31 d, 32..63 dmin (f16, row i at 2 i); 64..255: 3 chunks of 64 bytes, chunk w bytes
//   4 i .. 4 i + 3 = row i's packed 6-bit scales/mins bytes 4 w .. 4 w + 3 (ggml's 12-byte packing,
//   unpacked in the kernel for 16 rows at once); then 32 chunks of 64 bytes, chunk 8 c + p bytes
//   4 i + t = row i's qs[32 c + 4 p + t] (low nibble: value 64 c + 4 p + t of sub-block 2 c, high:
//   value 64 c + 32 + 4 p + t of sub-block 2 c + 1).
//   Activations: q8k_activations.h's (codes, d_x per 256 values, 16-value code sums).
//   The dot product: per output one f32 accumulator from +0; per block B in order, with S_j the exact
//   int32 sum of u * q_x over sub-block j (32 values, u the 4-bit code), xs_j = s_2j + s_2j+1,
//   S = sum_j sc_j S_j and N = sum_j mn_j xs_j (exact int32),
//   acc = fma(f32(d) * d_x, float(S), acc), then acc = fma(-(f32(dmin) * d_x), float(N), acc);
//   y = acc (+ bias).
// Q5_Kx16 (GGUF Q5_K): Q4_Kx16's superblock (same offsets) followed by 64 little-endian 64-bit
//   masks, 16 * 176 bytes in all: mask 16 c + 8 h + p, bit 4 i + t = the fifth bit of row i's value
//   64 c + 32 h + 4 p + t (in the file, bit 2 c + h of qh[4 p + t]), so it lines up with the nibbles
//   of code chunk 8 c + p (Q5_0x16's scheme); u = nibble | fifth bit << 4 (0..31), otherwise
//   Q4_Kx16's dot product.
// Q2_Kx16 (GGUF Q2_K: 2-bit u, 4-bit scale sc and min mn per 16 values): 16 * 84 bytes per block:
//   bytes 0..31 d, 32..63 dmin; 64..319: 4 chunks, chunk w bytes 4 i .. 4 i + 3 = row i's scale bytes
//   4 w .. 4 w + 3 (low nibble sc, high nibble mn); 320..1343: 16 chunks, chunk k bytes 4 i + t = row
//   i's qs[4 k + t] (bits 2 f of qs[32 h + l] are u of value 32 (4 h + f) + l). The dot product:
//   acc = fma(f32(d) * d_x, float(S), acc), then acc = fma(-(f32(dmin) * d_x), float(N), acc),
//   S = sum_j sc_j (sum over sub-block j of u q_x), N = sum_j mn_j s_j (s_j x's 16-value code sum).
// Q3_Kx16 (GGUF Q3_K: u = 2 bits | hmask bit << 2, value d (sc - 32) (u - 4), sc 6-bit packed in 12
//   bytes): 16 * 110 bytes per block: bytes 0..31 d; 32..223: 3 chunks of the packed scale bytes as
//   Q2_Kx16's; 224..1247: the qs chunks as Q2_Kx16's; 1248..1759: 64 little-endian 64-bit masks,
//   mask 8 c + p, bit 4 i + t = row i's hmask bit c of value 32 c + 4 p + t (hmask[4 p + t]).
//   acc = fma(f32(d) * d_x, float(S), acc), S = sum_j (sc_j - 32) (sum over sub-block j of (u - 4) q_x).
//
// Q6_Kx16 (GGUF Q6_K, 256-value blocks, codes u = ql | qh << 4 in 0..63, value d sc_j (u - 32)): a
// superblock of 16 * 210 bytes per block:
//   bytes 0..31 d (f16, row i at 2 i); 32..287: 4 chunks of 64 bytes, chunk w bytes 4 i .. 4 i + 3 =
//   row i's int8 scales sc_4w .. sc_4w+3 (one per 16 values); 288..2335: 32 chunks, chunk c bytes
//   4 i + t = row i's ql[4 c + t]; 2336..3359: 16 chunks, chunk c bytes 4 i + t = row i's qh[4 c + t].
//   (As in the file, half h of a block reads ql[64 h + l] and ql[64 h + 32 + l] for l < 32: low
//   nibbles are values 128 h + l and 128 h + 32 + l, high nibbles + 64; qh[32 h + l]'s bit pairs 0..3
//   are the fifth and sixth bits of values 128 h + l, + 32, + 64, + 96.)
//   Activations: q8k_activations.h's. The dot product: per output one f32 accumulator from +0; per
//   block B in order, S = sum_j sc_j (sum over sub-block j's 16 values of (u - 32) q_x) (exact
//   int32), acc = fma(f32(d) * d_x, float(S), acc); y = acc (+ bias).
//
// I8Z32x16 / I4Z32x16 (lemma's asymmetric int8 / int4 blocks, lemma_int_blocks.h: value = d (u - z),
//   u unsigned, one f16 d and one u8 z per row and 32 values): 16 * 35 (I8) or 16 * 19 (I4) bytes per
//   block: bytes 0..31 the rows' d (row i at 2 i), 32..47 their z (row i at 32 + i), then the codes
//   from byte 48 in Q8_0x16's chunks (I8: u as it is) or Q4_0x16's (I4: the file's nibble bytes).
//   Activations and dot product as Q8_0x16's below, with S_b = exact int32 sum of (u - z) q_x.
//
// IQ4_NLx16 (GGUF IQ4_NL: value = d * kIq4Values[u], u 4-bit, quant_blocks.h): Q4_0x16's superblock
//   exactly (16 * 18 bytes: d, then the file's nibble bytes in 4 chunks); u indexes the table instead
//   of giving u - 8. Activations and dot product as Q8_0x16's, with S_b = exact int32 sum of
//   kIq4Values[u] q_x.
// IQ4_XSx16 (GGUF IQ4_XS: 8 sub-blocks of 32 per 256 values, 6-bit sub-block scales ls): 16 * 136
//   bytes per 256 values: bytes 0..31 d (f16, row i at 2 i), 32..63 scales_h (u16, row i at 32 +
//   2 i), 64..127 scales_l (row i's 4 bytes at 64 + 4 i), then from byte 128 the 8 sub-blocks' codes,
//   sub-block s at 128 + 256 s in IQ4_NLx16's 4 chunks (chunk p bytes 4 i + t = row i's qs[16 s +
//   4 p + t]). Activations as Q8_0x16's (one scale per 32 values). The dot product: per output one
//   f32 accumulator from +0; for each 32-value block b = 8 B + s in order, with dw = f32(d) *
//   float(ls_s - 32) (exact), acc = fma(dw * d_x, float(S_b), acc), S_b = exact int32 sum of
//   kIq4Values[u] q_x; y = acc (+ bias).
//
// W8A8x16 (lemma W8A8, lemma_int_blocks.h): Q8_0x16's bytes (codes are the file's q + 128 as they
//   are); d is the row's scale, the same in every block. Activations: the signed int8 layout below,
//   written by the W8A8 rule (one scale per row: every block's scale entry holds it). The dot product
//   is W8A8's: S = exact int32 sum over the whole row of q_w q_x, y = float(S) * (s_x * d) (+ bias);
//   K above kW8A8MaxK gives NaN, as every W8A8 kernel.
//
// F16x16 (f16 weights, K a multiple of 16; f32 activations, MatmulPrecision::kF32Activations): a group
// is K chunks of 32 bytes in k order; chunk k, bytes 2 i .. 2 i + 1 = row i's value k (padding rows
// +0). One vcvtph2ps of a chunk gives 16 rows' value k in f32. The dot product: per output one f32
// accumulator from +0; for each k in order, acc = fma(f32(w_k), x_k, acc) (one rounding, nothing
// flushed); y = acc (+ bias).
//
// BF16x16 (bf16 weights, K a multiple of 32; MatmulPrecision::kBf16Activations): a group is K / 2
// chunks of 64 bytes in k order; chunk c, bytes 4 i .. 4 i + 3 = row i's values 2 c and 2 c + 1
// (padding rows +0). That chunk is one vdpbf16ps operand (16 rows' pairs against x's pair 2 c, 2 c + 1
// broadcast), and 16 chunks in a row are the VNNI-packed B tile of an AMX TDPBF16PS (16 pairs x 16
// rows). x is bf16_activations.h's. The dot product, exactly vdpbf16ps's as the Intel SDM defines it
// (the scalar reference spells it out): per output one f32 accumulator from +0; for each pair c in
// order, acc += x[2c+1] * w[2c+1] then acc += x[2c] * w[2c] (each product exact, each add rounded to
// nearest even; bf16 subnormal inputs read as 0, subnormal results flushed to 0); y = acc (+ bias).
//
// Activations (MatmulPrecision::kInt8Activations, x quantised by int8_activations.h's rule): the
// same codes and scales as int8_activations.h but the codes signed (padding 0), and each row's record
// longer by int8_scales_stride(K) int32: each block's code sum after the scales (for the start value
// -bias * sum that removes the weights' +128 / +8 from vpdpbusd's exact sums).
//
// The dot product (the reference defines the bits; the VNNI kernel matches them): per output
// (m, n), one f32 accumulator starts at +0; for each block b in order,
//   acc = fma(f32(d_w) * d_x, float(S_b), acc),  S_b = exact int32 sum of q_x * q_w over the block;
// y = acc (+ bias). No step depends on M or on other rows: batch invariant.
// Plain declarations and `static` helpers (the ISA files include this header; see int8_activations.h).
#pragma once

#include <cstddef>
#include <cstdint>

#include "lemma/kernels/int8_activations.h"
#include "lemma/tensor/dtype.h"

namespace lemma::kernels {

constexpr int64_t kInterleaveRows = 16;

// Byte offsets inside a Q2_Kx16 (kQ3 = false) / Q3_Kx16 superblock (the layout above).
template <bool kQ3>
struct Q23Kx16Layout {
  static constexpr int64_t kSuperBytes = kInterleaveRows * (kQ3 ? 110 : 84);
  static constexpr int64_t kScalesAt = kQ3 ? 32 : 64, kCodesAt = kQ3 ? 224 : 320, kHighAt = 1248;
};

// Byte offsets inside an IQ4_XSx16 superblock (the layout above).
struct Iq4XsX16Layout {
  static constexpr int64_t kSuperBytes = kInterleaveRows * 136;
  static constexpr int64_t kScalesHighAt = 32, kScalesLowAt = 64, kCodesAt = 128, kSubBlockBytes = 256;
};

// Byte offsets inside an I8Z32x16 / I4Z32x16 superblock (the layout above).
struct IntZx16Layout {
  static constexpr int64_t kZerosAt = 32, kCodesAt = 48;
};

// Whether `plain` has an interleaved form: Q8_0/Q4_0/Q5_0, Q4_1/Q5_1, Q2_K..Q6_K, IQ4_NL/IQ4_XS, lemma
// I8Z32/I4Z32/W8A8, bf16 and f16.
bool has_interleaved_form(DType plain);
// The buffer interleave_rows() writes for N rows of K values (K a whole number of
// format_block_values(interleaved(plain)): 32 values for most, the K-quants' and IQ4_XS's 256, f16's 16).
size_t interleaved_bytes(DType plain, int64_t N, int64_t K);
// Re-lays N rows of `plain` blocks (rows dtype_bytes(K) apart, as in GGUF) into `out`
// (interleaved_bytes(plain, N, K) bytes). `plain` must have an interleaved form.
void interleave_rows(DType plain, const void* rows, int64_t N, int64_t K, void* out);

// Row `row` of an interleaved [N, K] matrix of `plain` values (`data` its buffer) as f32 into out[0, K): bit for bit what dequantize_row() gives for the file's row (each
// block is put back into the file's bytes first). For embedding lookups of a tied LM head.
void read_interleaved_row(DType plain, const void* data, int64_t K, int64_t row, float* out);

// The signed activation buffer (see above): rows of int8_signed_row_bytes(K).
static inline int64_t int8_signed_row_bytes(int64_t K) { return int8_row_bytes(K) + 4 * int8_scales_stride(K); }
static inline size_t int8_signed_activation_bytes(int64_t M, int64_t K) { return static_cast<size_t>(M * int8_signed_row_bytes(K)); }
// The same layout written by W8A8's per-row rule (W8A8x16): its own function, so the registry (and the
// tests that group quantisers by it) tell the two formats apart.
static inline size_t w8a8_signed_activation_bytes(int64_t M, int64_t K) { return int8_signed_activation_bytes(M, K); }
static inline const int8_t* int8_signed_codes(const void* xq, int64_t K, int64_t m) {
  return static_cast<const int8_t*>(xq) + m * int8_signed_row_bytes(K);
}
static inline const float* int8_signed_scales(const void* xq, int64_t K, int64_t m) {
  return reinterpret_cast<const float*>(int8_signed_codes(xq, K, m) + int8_codes_stride(K));
}
static inline const int32_t* int8_block_sums(const void* xq, int64_t K, int64_t m) {
  return reinterpret_cast<const int32_t*>(int8_signed_scales(xq, K, m) + int8_scales_stride(K));
}
// Row m's codes, block scales and block code sums, as the interleaved kernels read them.
struct Int8SignedRow {
  const int8_t* codes;
  const float* scales;
  const int32_t* sums;
};
static inline Int8SignedRow int8_signed_row(const void* xq, int64_t K, int64_t m) {
  return {int8_signed_codes(xq, K, m), int8_signed_scales(xq, K, m), int8_block_sums(xq, K, m)};
}
// The rest of row m of a W8A8 signed buffer once its whole blocks' codes and sums are written
// (what every W8A8x16 quantiser shares): every block's scale entry amax / 127 (one scale per row),
// padding blocks' sums 0, padding codes 0.
static inline void finish_w8a8_signed_row(void* out, int64_t K, int64_t m, float amax) {
  auto* codes = const_cast<int8_t*>(int8_signed_codes(out, K, m));
  auto* scales = const_cast<float*>(int8_signed_scales(out, K, m));
  auto* sums = const_cast<int32_t*>(int8_block_sums(out, K, m));
  for (int64_t b = K / 32; b < int8_scales_stride(K); ++b) sums[b] = 0;
  for (int64_t b = 0; b < int8_scales_stride(K); ++b) scales[b] = amax / 127.0f;
  for (int64_t k = K; k < int8_codes_stride(K); ++k) codes[k] = 0;
}
// Turns a buffer of M signed rows (int8_signed_activation_bytes), each of which starts with what a
// QuantizeActivationsFn wrote for that row alone (int8_activations.h: codes, scales), into the signed
// form in place: codes - 128, the block sums after the scales.
void make_int8_activations_signed(int64_t M, int64_t K, void* out);

}  // namespace lemma::kernels
