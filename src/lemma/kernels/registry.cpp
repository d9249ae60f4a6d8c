#include "lemma/kernels/registry.h"

#include <atomic>

#include "lemma/base/logging.h"
#include "lemma/kernels/bf16_activations.h"
#include "lemma/kernels/dequantize.h"
#include "lemma/kernels/int8_activations.h"
#include "lemma/kernels/interleaved_blocks.h"
#include "lemma/kernels/matmul_precision.h"
#include "lemma/kernels/q8k_activations.h"
#include "lemma/kernels/reference/interleaved_bf16.h"
#include "lemma/kernels/reference/interleaved_f16.h"
#include "lemma/kernels/reference/lemma_int.h"
#include "lemma/kernels/reference/reference_kernels.h"
#include "lemma/kernels/x86/amx/amx_bf16.h"
#include "lemma/kernels/x86/amx/amx_int8.h"
#include "lemma/kernels/x86/int8_kernels.h"
#include "lemma/kernels/x86/simd/simd_kernels.h"
#include "lemma/kernels/x86/x86_kernels.h"

namespace lemma::kernels {

namespace {

template <DType T>
void reference(const MatmulArgs& args) {
  matmul_reference(T, args);
}

// Quantized weights: the reference decoder feeding vectorised FMAs.
template <DType T, Isa I>
void dequant_then_fma(const MatmulArgs& args) {
  const DequantizeFn decode = dequantize_fn(T, I);
  const DTypeInfo& info = dtype_info(T);
  const auto elements = static_cast<int64_t>(info.block_elements);
  const auto bytes = static_cast<int64_t>(info.block_bytes);
  if constexpr (I == Isa::kAvx2) {
    x86::avx2::matmul_dequant(args, decode, elements, bytes);
  } else {
    x86::avx512::matmul_dequant(args, decode, elements, bytes);
  }
}

// W8A8 on AVX-512: vpdpbusd where the CPU has AVX512_VNNI, else the AVX2 kernel (same bits).
void w8a8_avx512(const MatmulArgs& args) {
  if (cpu_features().avx512_vnni) {
    x86::matmul_w8a8_avx512vnni(args);
  } else {
    x86::matmul_w8a8_avx2(args);
  }
}

// Int8 activations on AVX-512: VNNI where the CPU has it, else the AVX2 kernels (same bits).
template <MatmulFn Vnni, MatmulFn Avx2>
void int8_avx512(const MatmulArgs& args) {
  if (cpu_features().avx512_vnni) {
    Vnni(args);
  } else {
    Avx2(args);
  }
}

// Int8 activations on AMX: the AMX-INT8 kernel from MinRows rows of x, the VNNI kernel below (the
// same bits, so the switch keeps every output independent of M). The tiles pay off from 32 rows for
// Q8_0x16 (one-group panels, interleaved_amx_kernel.h; below, staging costs more than they save);
// the nibble forms unpack their codes while staging, which only 128 rows and more repay.
constexpr int64_t kAmxQ8MinRows = 32;
constexpr int64_t kAmxNibbleMinRows = 128;
template <MatmulFn Amx, MatmulFn Vnni, int64_t MinRows>
void int8_amx(const MatmulArgs& args) {
  if (args.M >= MinRows) {
    Amx(args);
  } else {
    Vnni(args);
  }
}

constexpr auto kF32 = MatmulPrecision::kF32Activations;
constexpr auto kInt8 = MatmulPrecision::kInt8Activations;
constexpr auto kBf16 = MatmulPrecision::kBf16Activations;

// Add a kernel here and nowhere else. Order within one (dtype, ISA, precision) decides ties.
constexpr MatmulKernel kKernels[] = {
    {"reference_f32", DType::kF32, Isa::kScalar, kF32, false, reference<DType::kF32>},
    {"reference_f16", DType::kF16, Isa::kScalar, kF32, false, reference<DType::kF16>},
    {"reference_bf16", DType::kBF16, Isa::kScalar, kF32, false, reference<DType::kBF16>},
    {"reference_q4_0", DType::kQ4_0, Isa::kScalar, kF32, false, reference<DType::kQ4_0>},
    {"reference_q4_1", DType::kQ4_1, Isa::kScalar, kF32, false, reference<DType::kQ4_1>},
    {"reference_q5_0", DType::kQ5_0, Isa::kScalar, kF32, false, reference<DType::kQ5_0>},
    {"reference_q5_1", DType::kQ5_1, Isa::kScalar, kF32, false, reference<DType::kQ5_1>},
    {"reference_q8_0", DType::kQ8_0, Isa::kScalar, kF32, false, reference<DType::kQ8_0>},
    {"reference_q4_k", DType::kQ4_K, Isa::kScalar, kF32, false, reference<DType::kQ4_K>},
    {"reference_q5_k", DType::kQ5_K, Isa::kScalar, kF32, false, reference<DType::kQ5_K>},
    {"reference_q6_k", DType::kQ6_K, Isa::kScalar, kF32, false, reference<DType::kQ6_K>},
    {"reference_q2_k", DType::kQ2_K, Isa::kScalar, kF32, false, reference<DType::kQ2_K>},
    {"reference_q3_k", DType::kQ3_K, Isa::kScalar, kF32, false, reference<DType::kQ3_K>},
    {"reference_iq4_nl", DType::kIQ4_NL, Isa::kScalar, kF32, false, reference<DType::kIQ4_NL>},
    {"reference_iq4_xs", DType::kIQ4_XS, Isa::kScalar, kF32, false, reference<DType::kIQ4_XS>},
    {"avx2_f32", DType::kF32, Isa::kAvx2, kF32, false, x86::avx2::matmul_f32},
    {"avx2_f16", DType::kF16, Isa::kAvx2, kF32, false, x86::avx2::matmul_f16},
    {"avx2_bf16", DType::kBF16, Isa::kAvx2, kF32, false, x86::avx2::matmul_bf16},
    {"avx512_f32", DType::kF32, Isa::kAvx512, kF32, false, x86::avx512::matmul_f32},
    {"avx512_f16", DType::kF16, Isa::kAvx512, kF32, false, x86::avx512::matmul_f16},
    {"avx512_bf16", DType::kBF16, Isa::kAvx512, kF32, false, x86::avx512::matmul_bf16},
    {"avx2_q4_0", DType::kQ4_0, Isa::kAvx2, kF32, false, dequant_then_fma<DType::kQ4_0, Isa::kAvx2>},
    {"avx2_q4_1", DType::kQ4_1, Isa::kAvx2, kF32, false, dequant_then_fma<DType::kQ4_1, Isa::kAvx2>},
    {"avx2_q5_0", DType::kQ5_0, Isa::kAvx2, kF32, false, dequant_then_fma<DType::kQ5_0, Isa::kAvx2>},
    {"avx2_q5_1", DType::kQ5_1, Isa::kAvx2, kF32, false, dequant_then_fma<DType::kQ5_1, Isa::kAvx2>},
    {"avx2_q8_0", DType::kQ8_0, Isa::kAvx2, kF32, false, dequant_then_fma<DType::kQ8_0, Isa::kAvx2>},
    {"avx2_q4_k", DType::kQ4_K, Isa::kAvx2, kF32, false, dequant_then_fma<DType::kQ4_K, Isa::kAvx2>},
    {"avx2_q5_k", DType::kQ5_K, Isa::kAvx2, kF32, false, dequant_then_fma<DType::kQ5_K, Isa::kAvx2>},
    {"avx2_q6_k", DType::kQ6_K, Isa::kAvx2, kF32, false, dequant_then_fma<DType::kQ6_K, Isa::kAvx2>},
    {"avx2_q2_k", DType::kQ2_K, Isa::kAvx2, kF32, false, dequant_then_fma<DType::kQ2_K, Isa::kAvx2>},
    {"avx2_q3_k", DType::kQ3_K, Isa::kAvx2, kF32, false, dequant_then_fma<DType::kQ3_K, Isa::kAvx2>},
    {"avx2_iq4_nl", DType::kIQ4_NL, Isa::kAvx2, kF32, false, dequant_then_fma<DType::kIQ4_NL, Isa::kAvx2>},
    {"avx2_iq4_xs", DType::kIQ4_XS, Isa::kAvx2, kF32, false, dequant_then_fma<DType::kIQ4_XS, Isa::kAvx2>},
    {"avx512_q4_0", DType::kQ4_0, Isa::kAvx512, kF32, false, dequant_then_fma<DType::kQ4_0, Isa::kAvx512>},
    {"avx512_q4_1", DType::kQ4_1, Isa::kAvx512, kF32, false, dequant_then_fma<DType::kQ4_1, Isa::kAvx512>},
    {"avx512_q5_0", DType::kQ5_0, Isa::kAvx512, kF32, false, dequant_then_fma<DType::kQ5_0, Isa::kAvx512>},
    {"avx512_q5_1", DType::kQ5_1, Isa::kAvx512, kF32, false, dequant_then_fma<DType::kQ5_1, Isa::kAvx512>},
    {"avx512_q8_0", DType::kQ8_0, Isa::kAvx512, kF32, false, dequant_then_fma<DType::kQ8_0, Isa::kAvx512>},
    {"avx512_q4_k", DType::kQ4_K, Isa::kAvx512, kF32, false, dequant_then_fma<DType::kQ4_K, Isa::kAvx512>},
    {"avx512_q5_k", DType::kQ5_K, Isa::kAvx512, kF32, false, dequant_then_fma<DType::kQ5_K, Isa::kAvx512>},
    {"avx512_q6_k", DType::kQ6_K, Isa::kAvx512, kF32, false, dequant_then_fma<DType::kQ6_K, Isa::kAvx512>},
    {"avx512_q2_k", DType::kQ2_K, Isa::kAvx512, kF32, false, dequant_then_fma<DType::kQ2_K, Isa::kAvx512>},
    {"avx512_q3_k", DType::kQ3_K, Isa::kAvx512, kF32, false, dequant_then_fma<DType::kQ3_K, Isa::kAvx512>},
    {"avx512_iq4_nl", DType::kIQ4_NL, Isa::kAvx512, kF32, false, dequant_then_fma<DType::kIQ4_NL, Isa::kAvx512>},
    {"avx512_iq4_xs", DType::kIQ4_XS, Isa::kAvx512, kF32, false, dequant_then_fma<DType::kIQ4_XS, Isa::kAvx512>},
    {"avx512_bf16_dpbf16", DType::kBF16, Isa::kAvx512, kBf16, true, x86::matmul_bf16_dpbf16_avx512,
     x86::pack_x_bf16_avx512, bf16_activation_bytes},
    // Interleaved bf16x16 (interleaved_blocks.h): bf16 activations only. Model makes it from AVX2 up
    // (AVX512_BF16's vdpbf16ps, or the same bits by AVX2 FMAs); the reference serves scalar.
    {"reference_bf16x16", DType::kBF16x16, Isa::kScalar, kBf16, false, matmul_bf16x16_reference,
     pack_x_bf16_reference, bf16_activation_bytes},
    {"avx2_bf16x16", DType::kBF16x16, Isa::kAvx2, kBf16, false, x86::matmul_bf16x16_avx2, pack_x_bf16_reference,
     bf16_activation_bytes},
    {"avx512_bf16x16_dpbf16", DType::kBF16x16, Isa::kAvx512, kBf16, true, x86::matmul_bf16x16_dpbf16_avx512,
     x86::pack_x_bf16_avx512, bf16_activation_bytes},
    // Interleaved f16x16 (interleaved_blocks.h): f32 activations; Model makes it from AVX2 up.
    {"reference_f16x16", DType::kF16x16, Isa::kScalar, kF32, false, matmul_f16x16_reference},
    {"avx2_f16x16", DType::kF16x16, Isa::kAvx2, kF32, false, x86::avx2::matmul_f16x16},
    {"avx512_f16x16", DType::kF16x16, Isa::kAvx512, kF32, false, x86::avx512::matmul_f16x16},
    // On AMX tiles (x86/amx/): TDPBF16PS, whose pair order (even first) gives other bits than vdpbf16ps.
    {"amx_bf16x16", DType::kBF16x16, Isa::kAmx, kBf16, true, x86::matmul_bf16x16_amx, x86::pack_x_bf16_avx512,
     bf16_activation_bytes},
    // lemma int formats (lemma_int_blocks.h). W8A8 rows quantise x to int8 themselves: the dtype,
    // not MatmulPrecision, selects int8 activations.
    {"reference_i8z32", DType::kI8Z32, Isa::kScalar, kF32, false, reference<DType::kI8Z32>},
    {"reference_i4z32", DType::kI4Z32, Isa::kScalar, kF32, false, reference<DType::kI4Z32>},
    {"reference_w8a8", DType::kW8A8, Isa::kScalar, kF32, false, matmul_w8a8_reference},
    {"avx2_i8z32", DType::kI8Z32, Isa::kAvx2, kF32, false, dequant_then_fma<DType::kI8Z32, Isa::kAvx2>},
    {"avx2_i4z32", DType::kI4Z32, Isa::kAvx2, kF32, false, dequant_then_fma<DType::kI4Z32, Isa::kAvx2>},
    {"avx2_w8a8", DType::kW8A8, Isa::kAvx2, kF32, false, x86::matmul_w8a8_avx2},
    {"avx512_i8z32", DType::kI8Z32, Isa::kAvx512, kF32, false, dequant_then_fma<DType::kI8Z32, Isa::kAvx512>},
    {"avx512_i4z32", DType::kI4Z32, Isa::kAvx512, kF32, false, dequant_then_fma<DType::kI4Z32, Isa::kAvx512>},
    {"avx512_vnni_w8a8", DType::kW8A8, Isa::kAvx512, kF32, false, w8a8_avx512},
    // GGUF Q8_0/Q4_0/Q5_0 with x quantised to int8 per 32-value block (llama.cpp's Q8_0 dot;
    // int8_activations.h); the default from AVX2 up (matmul_precision.h).
    {"reference_q8_0_int8", DType::kQ8_0, Isa::kScalar, kInt8, false, matmul_q8_0_int8_reference, quantize_activations_reference, int8_activation_bytes},
    {"reference_q4_0_int8", DType::kQ4_0, Isa::kScalar, kInt8, false, matmul_q4_0_int8_reference, quantize_activations_reference, int8_activation_bytes},
    {"reference_q5_0_int8", DType::kQ5_0, Isa::kScalar, kInt8, false, matmul_q5_0_int8_reference, quantize_activations_reference, int8_activation_bytes},
    {"avx2_q8_0_int8", DType::kQ8_0, Isa::kAvx2, kInt8, false, x86::matmul_q8_0_int8_avx2, x86::avx2::quantize_activations, int8_activation_bytes},
    {"avx2_q4_0_int8", DType::kQ4_0, Isa::kAvx2, kInt8, false, x86::matmul_q4_0_int8_avx2, x86::avx2::quantize_activations, int8_activation_bytes},
    {"avx2_q5_0_int8", DType::kQ5_0, Isa::kAvx2, kInt8, false, x86::matmul_q5_0_int8_avx2, x86::avx2::quantize_activations, int8_activation_bytes},
    {"avx512_vnni_q8_0_int8", DType::kQ8_0, Isa::kAvx512, kInt8, false,
     int8_avx512<x86::matmul_q8_0_int8_avx512vnni, x86::matmul_q8_0_int8_avx2>, x86::avx512::quantize_activations, int8_activation_bytes},
    {"avx512_vnni_q4_0_int8", DType::kQ4_0, Isa::kAvx512, kInt8, false,
     int8_avx512<x86::matmul_q4_0_int8_avx512vnni, x86::matmul_q4_0_int8_avx2>, x86::avx512::quantize_activations, int8_activation_bytes},
    {"avx512_vnni_q5_0_int8", DType::kQ5_0, Isa::kAvx512, kInt8, false,
     int8_avx512<x86::matmul_q5_0_int8_avx512vnni, x86::matmul_q5_0_int8_avx2>, x86::avx512::quantize_activations, int8_activation_bytes},
    // Interleaved Q8_0x16/Q4_0x16/Q5_0x16/Q2_Kx16..Q6_Kx16 (interleaved_blocks.h): only int8 activations (signed,
    // with block sums; the K-quants: Q8_K-style). Model makes them wherever AVX2 runs (the reference serves scalar).
    {"reference_q8_0x16_int8", DType::kQ8_0x16, Isa::kScalar, kInt8, false, matmul_q8_0x16_int8_reference, quantize_signed_activations_reference, int8_signed_activation_bytes},
    {"reference_q4_0x16_int8", DType::kQ4_0x16, Isa::kScalar, kInt8, false, matmul_q4_0x16_int8_reference, quantize_signed_activations_reference, int8_signed_activation_bytes},
    {"reference_q5_0x16_int8", DType::kQ5_0x16, Isa::kScalar, kInt8, false, matmul_q5_0x16_int8_reference, quantize_signed_activations_reference, int8_signed_activation_bytes},
    {"reference_q4_1x16_int8", DType::kQ4_1x16, Isa::kScalar, kInt8, false, matmul_q4_1x16_int8_reference, quantize_signed_activations_reference, int8_signed_activation_bytes},
    {"reference_q5_1x16_int8", DType::kQ5_1x16, Isa::kScalar, kInt8, false, matmul_q5_1x16_int8_reference, quantize_signed_activations_reference, int8_signed_activation_bytes},
    {"reference_iq4_nlx16_int8", DType::kIQ4_NLx16, Isa::kScalar, kInt8, false, matmul_iq4_nlx16_int8_reference, quantize_signed_activations_reference, int8_signed_activation_bytes},
    {"reference_iq4_xsx16_int8", DType::kIQ4_XSx16, Isa::kScalar, kInt8, false, matmul_iq4_xsx16_int8_reference, quantize_signed_activations_reference, int8_signed_activation_bytes},
    {"reference_q4_kx16_int8", DType::kQ4_Kx16, Isa::kScalar, kInt8, false, matmul_q4_kx16_int8_reference, quantize_q8k_activations_reference, q8k_activation_bytes},
    {"reference_q2_kx16_int8", DType::kQ2_Kx16, Isa::kScalar, kInt8, false, matmul_q2_kx16_int8_reference, quantize_q8k_activations_reference, q8k_activation_bytes},
    {"reference_q3_kx16_int8", DType::kQ3_Kx16, Isa::kScalar, kInt8, false, matmul_q3_kx16_int8_reference, quantize_q8k_activations_reference, q8k_activation_bytes},
    {"reference_q5_kx16_int8", DType::kQ5_Kx16, Isa::kScalar, kInt8, false, matmul_q5_kx16_int8_reference, quantize_q8k_activations_reference, q8k_activation_bytes},
    {"reference_q6_kx16_int8", DType::kQ6_Kx16, Isa::kScalar, kInt8, false, matmul_q6_kx16_int8_reference, quantize_q8k_activations_reference, q8k_activation_bytes},
    {"avx2_q8_0x16_int8", DType::kQ8_0x16, Isa::kAvx2, kInt8, false, x86::matmul_q8_0x16_int8_avx2, x86::avx2::quantize_signed_activations, int8_signed_activation_bytes},
    {"avx2_q4_0x16_int8", DType::kQ4_0x16, Isa::kAvx2, kInt8, false, x86::matmul_q4_0x16_int8_avx2, x86::avx2::quantize_signed_activations, int8_signed_activation_bytes},
    {"avx2_q5_0x16_int8", DType::kQ5_0x16, Isa::kAvx2, kInt8, false, x86::matmul_q5_0x16_int8_avx2, x86::avx2::quantize_signed_activations, int8_signed_activation_bytes},
    {"avx2_q4_1x16_int8", DType::kQ4_1x16, Isa::kAvx2, kInt8, false, x86::matmul_q4_1x16_int8_avx2, x86::avx2::quantize_signed_activations, int8_signed_activation_bytes},
    {"avx2_q5_1x16_int8", DType::kQ5_1x16, Isa::kAvx2, kInt8, false, x86::matmul_q5_1x16_int8_avx2, x86::avx2::quantize_signed_activations, int8_signed_activation_bytes},
    {"avx2_iq4_nlx16_int8", DType::kIQ4_NLx16, Isa::kAvx2, kInt8, false, x86::matmul_iq4_nlx16_int8_avx2, x86::avx2::quantize_signed_activations, int8_signed_activation_bytes},
    {"avx2_iq4_xsx16_int8", DType::kIQ4_XSx16, Isa::kAvx2, kInt8, false, x86::matmul_iq4_xsx16_int8_avx2, x86::avx2::quantize_signed_activations, int8_signed_activation_bytes},
    {"avx2_q2_kx16_int8", DType::kQ2_Kx16, Isa::kAvx2, kInt8, false, x86::matmul_q2_kx16_int8_avx2, x86::avx2::quantize_q8k_activations, q8k_activation_bytes},
    {"avx2_q3_kx16_int8", DType::kQ3_Kx16, Isa::kAvx2, kInt8, false, x86::matmul_q3_kx16_int8_avx2, x86::avx2::quantize_q8k_activations, q8k_activation_bytes},
    {"avx2_q4_kx16_int8", DType::kQ4_Kx16, Isa::kAvx2, kInt8, false, x86::matmul_q4_kx16_int8_avx2, x86::avx2::quantize_q8k_activations, q8k_activation_bytes},
    {"avx2_q5_kx16_int8", DType::kQ5_Kx16, Isa::kAvx2, kInt8, false, x86::matmul_q5_kx16_int8_avx2, x86::avx2::quantize_q8k_activations, q8k_activation_bytes},
    {"avx2_q6_kx16_int8", DType::kQ6_Kx16, Isa::kAvx2, kInt8, false, x86::matmul_q6_kx16_int8_avx2, x86::avx2::quantize_q8k_activations, q8k_activation_bytes},
    {"avx512_vnni_q8_0x16_int8", DType::kQ8_0x16, Isa::kAvx512, kInt8, false,
     int8_avx512<x86::matmul_q8_0x16_int8_avx512vnni, x86::matmul_q8_0x16_int8_avx2>, x86::avx512::quantize_signed_activations, int8_signed_activation_bytes},
    {"avx512_vnni_q4_0x16_int8", DType::kQ4_0x16, Isa::kAvx512, kInt8, false,
     int8_avx512<x86::matmul_q4_0x16_int8_avx512vnni, x86::matmul_q4_0x16_int8_avx2>, x86::avx512::quantize_signed_activations, int8_signed_activation_bytes},
    {"avx512_vnni_q5_0x16_int8", DType::kQ5_0x16, Isa::kAvx512, kInt8, false,
     int8_avx512<x86::matmul_q5_0x16_int8_avx512vnni, x86::matmul_q5_0x16_int8_avx2>, x86::avx512::quantize_signed_activations, int8_signed_activation_bytes},
    {"avx512_vnni_q4_1x16_int8", DType::kQ4_1x16, Isa::kAvx512, kInt8, false,
     int8_avx512<x86::matmul_q4_1x16_int8_avx512vnni, x86::matmul_q4_1x16_int8_avx2>, x86::avx512::quantize_signed_activations, int8_signed_activation_bytes},
    {"avx512_vnni_q5_1x16_int8", DType::kQ5_1x16, Isa::kAvx512, kInt8, false,
     int8_avx512<x86::matmul_q5_1x16_int8_avx512vnni, x86::matmul_q5_1x16_int8_avx2>, x86::avx512::quantize_signed_activations, int8_signed_activation_bytes},
    {"avx512_vnni_iq4_nlx16_int8", DType::kIQ4_NLx16, Isa::kAvx512, kInt8, false,
     int8_avx512<x86::matmul_iq4_nlx16_int8_avx512vnni, x86::matmul_iq4_nlx16_int8_avx2>, x86::avx512::quantize_signed_activations, int8_signed_activation_bytes},
    {"avx512_vnni_iq4_xsx16_int8", DType::kIQ4_XSx16, Isa::kAvx512, kInt8, false,
     int8_avx512<x86::matmul_iq4_xsx16_int8_avx512vnni, x86::matmul_iq4_xsx16_int8_avx2>, x86::avx512::quantize_signed_activations, int8_signed_activation_bytes},
    {"reference_i8z32x16_int8", DType::kI8Z32x16, Isa::kScalar, kInt8, false, matmul_i8z32x16_int8_reference, quantize_signed_activations_reference, int8_signed_activation_bytes},
    {"reference_i4z32x16_int8", DType::kI4Z32x16, Isa::kScalar, kInt8, false, matmul_i4z32x16_int8_reference, quantize_signed_activations_reference, int8_signed_activation_bytes},
    {"avx2_i8z32x16_int8", DType::kI8Z32x16, Isa::kAvx2, kInt8, false, x86::matmul_i8z32x16_int8_avx2, x86::avx2::quantize_signed_activations, int8_signed_activation_bytes},
    {"avx2_i4z32x16_int8", DType::kI4Z32x16, Isa::kAvx2, kInt8, false, x86::matmul_i4z32x16_int8_avx2, x86::avx2::quantize_signed_activations, int8_signed_activation_bytes},
    {"avx512_vnni_i8z32x16_int8", DType::kI8Z32x16, Isa::kAvx512, kInt8, false,
     int8_avx512<x86::matmul_i8z32x16_int8_avx512vnni, x86::matmul_i8z32x16_int8_avx2>, x86::avx512::quantize_signed_activations, int8_signed_activation_bytes},
    {"avx512_vnni_i4z32x16_int8", DType::kI4Z32x16, Isa::kAvx512, kInt8, false,
     int8_avx512<x86::matmul_i4z32x16_int8_avx512vnni, x86::matmul_i4z32x16_int8_avx2>, x86::avx512::quantize_signed_activations, int8_signed_activation_bytes},
    // W8A8x16 (interleaved W8A8): the W8A8 rule's int8 x in the signed layout; Model makes it from
    // AVX2 up.
    {"reference_w8a8x16", DType::kW8A8x16, Isa::kScalar, kInt8, false, matmul_w8a8x16_reference, quantize_w8a8_signed_activations_reference, w8a8_signed_activation_bytes},
    {"avx2_w8a8x16", DType::kW8A8x16, Isa::kAvx2, kInt8, false, x86::matmul_w8a8x16_avx2, x86::avx2::quantize_w8a8_signed_activations, w8a8_signed_activation_bytes},
    {"avx512_vnni_w8a8x16", DType::kW8A8x16, Isa::kAvx512, kInt8, false,
     int8_avx512<x86::matmul_w8a8x16_avx512vnni, x86::matmul_w8a8x16_avx2>, x86::avx512::quantize_w8a8_signed_activations, w8a8_signed_activation_bytes},
    {"avx512_vnni_q4_kx16_int8", DType::kQ4_Kx16, Isa::kAvx512, kInt8, false,
     int8_avx512<x86::matmul_q4_kx16_int8_avx512vnni, x86::matmul_q4_kx16_int8_avx2>, x86::avx512::quantize_q8k_activations, q8k_activation_bytes},
    {"avx512_vnni_q2_kx16_int8", DType::kQ2_Kx16, Isa::kAvx512, kInt8, false,
     int8_avx512<x86::matmul_q2_kx16_int8_avx512vnni, x86::matmul_q2_kx16_int8_avx2>, x86::avx512::quantize_q8k_activations, q8k_activation_bytes},
    {"avx512_vnni_q3_kx16_int8", DType::kQ3_Kx16, Isa::kAvx512, kInt8, false,
     int8_avx512<x86::matmul_q3_kx16_int8_avx512vnni, x86::matmul_q3_kx16_int8_avx2>, x86::avx512::quantize_q8k_activations, q8k_activation_bytes},
    {"avx512_vnni_q5_kx16_int8", DType::kQ5_Kx16, Isa::kAvx512, kInt8, false,
     int8_avx512<x86::matmul_q5_kx16_int8_avx512vnni, x86::matmul_q5_kx16_int8_avx2>, x86::avx512::quantize_q8k_activations, q8k_activation_bytes},
    {"avx512_vnni_q6_kx16_int8", DType::kQ6_Kx16, Isa::kAvx512, kInt8, false,
     int8_avx512<x86::matmul_q6_kx16_int8_avx512vnni, x86::matmul_q6_kx16_int8_avx2>, x86::avx512::quantize_q8k_activations, q8k_activation_bytes},
    // On AMX tiles (x86/amx/amx_int8.h): TDPBSSD per 32-value block and the oracle's f32 step, so the
    // VNNI rows' bits; from kAmxQ8MinRows / kAmxNibbleMinRows rows of x (below, the VNNI kernel: faster
    // there, same bits).
    {"amx_q8_0x16_int8", DType::kQ8_0x16, Isa::kAmx, kInt8, false,
     int8_amx<x86::matmul_q8_0x16_int8_amx, x86::matmul_q8_0x16_int8_avx512vnni, kAmxQ8MinRows>, x86::avx512::quantize_signed_activations, int8_signed_activation_bytes},
    {"amx_q4_0x16_int8", DType::kQ4_0x16, Isa::kAmx, kInt8, false,
     int8_amx<x86::matmul_q4_0x16_int8_amx, x86::matmul_q4_0x16_int8_avx512vnni, kAmxNibbleMinRows>, x86::avx512::quantize_signed_activations, int8_signed_activation_bytes},
    {"amx_q5_0x16_int8", DType::kQ5_0x16, Isa::kAmx, kInt8, false,
     int8_amx<x86::matmul_q5_0x16_int8_amx, x86::matmul_q5_0x16_int8_avx512vnni, kAmxNibbleMinRows>, x86::avx512::quantize_signed_activations, int8_signed_activation_bytes},
    {"amx_q4_1x16_int8", DType::kQ4_1x16, Isa::kAmx, kInt8, false,
     int8_amx<x86::matmul_q4_1x16_int8_amx, x86::matmul_q4_1x16_int8_avx512vnni, kAmxNibbleMinRows>, x86::avx512::quantize_signed_activations, int8_signed_activation_bytes},
    {"amx_q5_1x16_int8", DType::kQ5_1x16, Isa::kAmx, kInt8, false,
     int8_amx<x86::matmul_q5_1x16_int8_amx, x86::matmul_q5_1x16_int8_avx512vnni, kAmxNibbleMinRows>, x86::avx512::quantize_signed_activations, int8_signed_activation_bytes},
    {"amx_iq4_nlx16_int8", DType::kIQ4_NLx16, Isa::kAmx, kInt8, false,
     int8_amx<x86::matmul_iq4_nlx16_int8_amx, x86::matmul_iq4_nlx16_int8_avx512vnni, kAmxNibbleMinRows>, x86::avx512::quantize_signed_activations, int8_signed_activation_bytes},
    {"amx_iq4_xsx16_int8", DType::kIQ4_XSx16, Isa::kAmx, kInt8, false,
     int8_amx<x86::matmul_iq4_xsx16_int8_amx, x86::matmul_iq4_xsx16_int8_avx512vnni, kAmxNibbleMinRows>, x86::avx512::quantize_signed_activations, int8_signed_activation_bytes},
    // GGUF Q4_K/Q5_K/Q6_K/Q2_K/Q3_K with x quantised to int8 per 256-value block plus 16-value code sums
    // (llama.cpp's Q8_K dot; q8k_activations.h); the default from AVX2 up (matmul_precision.h).
    {"reference_q4_k_int8", DType::kQ4_K, Isa::kScalar, kInt8, false, matmul_q4_k_int8_reference, quantize_q8k_activations_reference, q8k_activation_bytes},
    {"reference_q5_k_int8", DType::kQ5_K, Isa::kScalar, kInt8, false, matmul_q5_k_int8_reference, quantize_q8k_activations_reference, q8k_activation_bytes},
    {"reference_q6_k_int8", DType::kQ6_K, Isa::kScalar, kInt8, false, matmul_q6_k_int8_reference, quantize_q8k_activations_reference, q8k_activation_bytes},
    {"avx2_q4_k_int8", DType::kQ4_K, Isa::kAvx2, kInt8, false, x86::matmul_q4_k_int8_avx2, x86::avx2::quantize_q8k_activations, q8k_activation_bytes},
    {"avx2_q5_k_int8", DType::kQ5_K, Isa::kAvx2, kInt8, false, x86::matmul_q5_k_int8_avx2, x86::avx2::quantize_q8k_activations, q8k_activation_bytes},
    {"avx2_q6_k_int8", DType::kQ6_K, Isa::kAvx2, kInt8, false, x86::matmul_q6_k_int8_avx2, x86::avx2::quantize_q8k_activations, q8k_activation_bytes},
    {"avx512_vnni_q4_k_int8", DType::kQ4_K, Isa::kAvx512, kInt8, false,
     int8_avx512<x86::matmul_q4_k_int8_avx512vnni, x86::matmul_q4_k_int8_avx2>, x86::avx512::quantize_q8k_activations, q8k_activation_bytes},
    {"avx512_vnni_q5_k_int8", DType::kQ5_K, Isa::kAvx512, kInt8, false,
     int8_avx512<x86::matmul_q5_k_int8_avx512vnni, x86::matmul_q5_k_int8_avx2>, x86::avx512::quantize_q8k_activations, q8k_activation_bytes},
    {"avx512_vnni_q6_k_int8", DType::kQ6_K, Isa::kAvx512, kInt8, false,
     int8_avx512<x86::matmul_q6_k_int8_avx512vnni, x86::matmul_q6_k_int8_avx2>, x86::avx512::quantize_q8k_activations, q8k_activation_bytes},
    {"reference_q2_k_int8", DType::kQ2_K, Isa::kScalar, kInt8, false, matmul_q2_k_int8_reference, quantize_q8k_activations_reference, q8k_activation_bytes},
    {"reference_q3_k_int8", DType::kQ3_K, Isa::kScalar, kInt8, false, matmul_q3_k_int8_reference, quantize_q8k_activations_reference, q8k_activation_bytes},
    {"avx2_q2_k_int8", DType::kQ2_K, Isa::kAvx2, kInt8, false, x86::matmul_q2_k_int8_avx2, x86::avx2::quantize_q8k_activations, q8k_activation_bytes},
    {"avx2_q3_k_int8", DType::kQ3_K, Isa::kAvx2, kInt8, false, x86::matmul_q3_k_int8_avx2, x86::avx2::quantize_q8k_activations, q8k_activation_bytes},
    {"avx512_vnni_q2_k_int8", DType::kQ2_K, Isa::kAvx512, kInt8, false,
     int8_avx512<x86::matmul_q2_k_int8_avx512vnni, x86::matmul_q2_k_int8_avx2>, x86::avx512::quantize_q8k_activations, q8k_activation_bytes},
    {"avx512_vnni_q3_k_int8", DType::kQ3_K, Isa::kAvx512, kInt8, false,
     int8_avx512<x86::matmul_q3_k_int8_avx512vnni, x86::matmul_q3_k_int8_avx2>, x86::avx512::quantize_q8k_activations, q8k_activation_bytes},
};
constexpr size_t kKernelCount = sizeof(kKernels) / sizeof(kKernels[0]);
constexpr size_t kLoggedWords = (kKernelCount + 63) / 64;

const MatmulKernel* find_exact(DType weight, int64_t K, Isa isa, MatmulPrecision precision) {
  const auto block = static_cast<int64_t>(dtype_info(weight).block_elements);
  if (K % block != 0) return nullptr;
  const MatmulKernel* best = nullptr;
  for (const MatmulKernel& k : kKernels) {
    if (k.weight != weight || k.precision != precision || k.isa > isa) continue;
    if (k.needs_avx512_bf16 && !cpu_features().avx512_bf16) continue;
    if (best == nullptr || k.isa > best->isa) best = &k;
  }
  return best;
}

// Logs each kernel's first use at debug level (choices are per call, so log only news).
void log_choice(const MatmulKernel& kernel, Isa isa) {
  static std::atomic<uint64_t> logged_words[kLoggedWords] = {};
  const auto index = static_cast<size_t>(&kernel - kKernels);
  std::atomic<uint64_t>& logged = logged_words[index / 64];
  const uint64_t bit = uint64_t{1} << (index % 64);
  // A plain load first: matmul runs this on every call from every thread, and an unconditional
  // read-modify-write would bounce the cache line between cores.
  if ((logged.load(std::memory_order_relaxed) & bit) == 0 &&
      (logged.fetch_or(bit, std::memory_order_relaxed) & bit) == 0) {
    log().debug("kernels: matmul {} weights -> {} (ISA {})", dtype_name(kernel.weight), kernel.name,
                isa_name(isa));
  }
}

}  // namespace

std::span<const MatmulKernel> matmul_kernels() { return {kKernels, kKernelCount}; }

const MatmulKernel* find_matmul_kernel(DType weight, int64_t K, Isa isa, MatmulPrecision precision) {
  const MatmulKernel* kernel = find_exact(weight, K, isa, precision);
  if (kernel == nullptr && precision != MatmulPrecision::kF32Activations) {
    kernel = find_exact(weight, K, isa, MatmulPrecision::kF32Activations);
  }
  if (kernel != nullptr) log_choice(*kernel, isa);
  return kernel;
}

std::string_view kernel_name_for(DType weight, int64_t K, Isa isa, MatmulPrecision precision) {
  const MatmulKernel* kernel = find_matmul_kernel(weight, K, isa, precision);
  return kernel != nullptr ? kernel->name : std::string_view{};
}

std::string_view kernel_name_for(DType weight, int64_t K) {
  return kernel_name_for(weight, K, active_isa(), default_matmul_precision(weight, active_isa()));
}

}  // namespace lemma::kernels
