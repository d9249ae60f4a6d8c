// The matmul kernel families as X-macro lists: one entry per weight format, expanded into the
// kernels' declarations (reference/lemma_int.h, x86/int8_kernels.h, x86/amx/amx_int8.h) and into
// the registry's rows (registry.cpp). A new format of an existing family is one line here and its
// kernel body; a new family is a list here plus its expansions. Macros only, no code.
#pragma once

// Block-quantized GGUF / lemma formats with f32 activations: each row decoded by the format's block
// decoder, then vector FMAs (x86/simd/matmul_dequant.cpp). X(name, DType enumerator)
#define LEMMA_DEQUANT_FORMATS(X)                                                                              \
  X(q4_0, kQ4_0) X(q4_1, kQ4_1) X(q5_0, kQ5_0) X(q5_1, kQ5_1) X(q8_0, kQ8_0) X(q4_k, kQ4_K) X(q5_k, kQ5_K) \
  X(q6_k, kQ6_K) X(q2_k, kQ2_K) X(q3_k, kQ3_K) X(iq4_nl, kIQ4_NL) X(iq4_xs, kIQ4_XS) X(i8z32, kI8Z32)      \
  X(i4z32, kI4Z32)

// GGUF formats in the file's layout over int8 activations: x quantised per 32-value block
// (int8_activations.h: Q8_0/Q4_0/Q5_0) or per 256-value Q8_K block with code sums
// (q8k_activations.h: the K-quants). Kernels matmul_<name>_int8_{reference,avx2,avx512vnni}.
#define LEMMA_INT8_BLOCK_FORMATS(X) X(q8_0, kQ8_0) X(q4_0, kQ4_0) X(q5_0, kQ5_0)
#define LEMMA_INT8_KQUANT_FORMATS(X) X(q4_k, kQ4_K) X(q5_k, kQ5_K) X(q6_k, kQ6_K) X(q2_k, kQ2_K) X(q3_k, kQ3_K)

// 16-row interleaved formats (interleaved_blocks.h; X(name, the plain DType)) over signed int8
// activations, with an AMX-INT8 kernel too (x86/amx/interleaved_amx_kernel.h), and without one; then
// those over Q8_K activations.
#define LEMMA_INTERLEAVED_AMX_FORMATS(X)                                                                \
  X(q8_0x16, kQ8_0) X(q4_0x16, kQ4_0) X(q5_0x16, kQ5_0) X(q4_1x16, kQ4_1) X(q5_1x16, kQ5_1) \
  X(iq4_nlx16, kIQ4_NL) X(iq4_xsx16, kIQ4_XS)
#define LEMMA_INTERLEAVED_SIGNED_FORMATS(X) LEMMA_INTERLEAVED_AMX_FORMATS(X) X(i8z32x16, kI8Z32) X(i4z32x16, kI4Z32)
#define LEMMA_INTERLEAVED_KQUANT_FORMATS(X) \
  X(q2_kx16, kQ2_K) X(q3_kx16, kQ3_K) X(q4_kx16, kQ4_K) X(q5_kx16, kQ5_K) X(q6_kx16, kQ6_K)

// Declares matmul_<name>_int8_<suffix>(const MatmulArgs&) for every format of a list.
#define LEMMA_DECLARE_INT8_MATMUL(name, dtype, suffix) void matmul_##name##_int8_##suffix(const MatmulArgs& args);
#define LEMMA_DECLARE_INT8_REFERENCE(name, dtype) LEMMA_DECLARE_INT8_MATMUL(name, dtype, reference)
#define LEMMA_DECLARE_INT8_AVX2(name, dtype) LEMMA_DECLARE_INT8_MATMUL(name, dtype, avx2)
#define LEMMA_DECLARE_INT8_VNNI(name, dtype) LEMMA_DECLARE_INT8_MATMUL(name, dtype, avx512vnni)
#define LEMMA_DECLARE_INT8_AMX(name, dtype) \
  LEMMA_DECLARE_INT8_MATMUL(name, dtype, amx) LEMMA_DECLARE_INT8_MATMUL(name, dtype, amx_emulated)
