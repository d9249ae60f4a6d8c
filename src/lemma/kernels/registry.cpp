#include "lemma/kernels/registry.h"

#include <atomic>

#include "lemma/base/logging.h"
#include "lemma/kernels/bf16_activations.h"
#include "lemma/kernels/dequantize.h"
#include "lemma/kernels/int8_activations.h"
#include "lemma/kernels/interleaved_blocks.h"
#include "lemma/kernels/kernel_policy.h"
#include "lemma/kernels/kernel_set.h"
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

constexpr auto kF32 = MatmulPrecision::kF32Activations;
constexpr auto kInt8 = MatmulPrecision::kInt8Activations;
constexpr auto kBf16 = MatmulPrecision::kBf16Activations;
constexpr auto kVnni = CpuFeature::kAvx512Vnni;
constexpr auto kDpbf16 = CpuFeature::kAvx512Bf16;
constexpr auto kAnyCpu = CpuFeature::kNone;

// The rows of each family in matmul_families.h.
#define LEMMA_F32_ROWS(name, dtype)                                                                   \
  {"reference_" #name, DType::dtype, Isa::kScalar, kF32, kAnyCpu, reference<DType::dtype>},          \
      {"avx2_" #name, DType::dtype, Isa::kAvx2, kF32, kAnyCpu, dequant_then_fma<DType::dtype, Isa::kAvx2>}, \
      {"avx512_" #name, DType::dtype, Isa::kAvx512, kF32, kAnyCpu, dequant_then_fma<DType::dtype, Isa::kAvx512>},
#define LEMMA_INT8_ROWS(name, format, quantizer, bytes)                                                   \
  {"reference_" #name "_int8", format, Isa::kScalar, kInt8, kAnyCpu, matmul_##name##_int8_reference,     \
   quantizer##_reference, bytes},                                                                         \
      {"avx2_" #name "_int8", format, Isa::kAvx2, kInt8, kAnyCpu, x86::matmul_##name##_int8_avx2,          \
       x86::avx2::quantizer, bytes},                                                                      \
      {"avx512_vnni_" #name "_int8", format, Isa::kAvx512, kInt8, kVnni, x86::matmul_##name##_int8_avx512vnni, \
       x86::avx512::quantizer, bytes},
#define LEMMA_BLOCK_INT8_ROWS(name, dtype) \
  LEMMA_INT8_ROWS(name, MatrixFormat(DType::dtype), quantize_activations, int8_activation_bytes)
#define LEMMA_KQUANT_INT8_ROWS(name, dtype) \
  LEMMA_INT8_ROWS(name, MatrixFormat(DType::dtype), quantize_q8k_activations, q8k_activation_bytes)
#define LEMMA_SIGNED_INT8_ROWS(name, dtype) \
  LEMMA_INT8_ROWS(name, interleaved(DType::dtype), quantize_signed_activations, int8_signed_activation_bytes)
#define LEMMA_INTERLEAVED_KQUANT_ROWS(name, dtype) \
  LEMMA_INT8_ROWS(name, interleaved(DType::dtype), quantize_q8k_activations, q8k_activation_bytes)
// On AMX tiles (x86/amx/amx_int8.h): TDPBSSD per 32-value block and the oracle's f32 step, so the VNNI
// rows' bits; from amx_min_rows() rows of x (kernel_policy.h), below which the VNNI row runs.
#define LEMMA_AMX_INT8_ROWS(name, dtype)                                                                       \
  {"amx_" #name "_int8", interleaved(DType::dtype), Isa::kAmx, kInt8, kAnyCpu, x86::matmul_##name##_int8_amx,               \
   x86::avx512::quantize_signed_activations, int8_signed_activation_bytes, amx_min_rows(DType::dtype)},

// Add a kernel here (or its format to matmul_families.h) and nowhere else.
constexpr MatmulKernel kKernels[] = {
    {"reference_f32", DType::kF32, Isa::kScalar, kF32, kAnyCpu, reference<DType::kF32>},
    {"reference_f16", DType::kF16, Isa::kScalar, kF32, kAnyCpu, reference<DType::kF16>},
    {"reference_bf16", DType::kBF16, Isa::kScalar, kF32, kAnyCpu, reference<DType::kBF16>},
    {"avx2_f32", DType::kF32, Isa::kAvx2, kF32, kAnyCpu, x86::avx2::matmul_f32},
    {"avx2_f16", DType::kF16, Isa::kAvx2, kF32, kAnyCpu, x86::avx2::matmul_f16},
    {"avx2_bf16", DType::kBF16, Isa::kAvx2, kF32, kAnyCpu, x86::avx2::matmul_bf16},
    {"avx512_f32", DType::kF32, Isa::kAvx512, kF32, kAnyCpu, x86::avx512::matmul_f32},
    {"avx512_f16", DType::kF16, Isa::kAvx512, kF32, kAnyCpu, x86::avx512::matmul_f16},
    {"avx512_bf16", DType::kBF16, Isa::kAvx512, kF32, kAnyCpu, x86::avx512::matmul_bf16},
    LEMMA_DEQUANT_FORMATS(LEMMA_F32_ROWS)
    // bf16 weights with x rounded to bf16 (vdpbf16ps).
    {"avx512_bf16_dpbf16", DType::kBF16, Isa::kAvx512, kBf16, kDpbf16, x86::matmul_bf16_dpbf16_avx512,
     x86::pack_x_bf16_avx512, bf16_activation_bytes},
    // Interleaved bf16x16 (interleaved_blocks.h): bf16 activations only; the AVX2 kernel gives
    // vdpbf16ps's bits by FMAs. TDPBF16PS on AMX tiles sums pairs in another order: other bits.
    {"reference_bf16x16", interleaved(DType::kBF16), Isa::kScalar, kBf16, kAnyCpu, matmul_bf16x16_reference,
     pack_x_bf16_reference, bf16_activation_bytes},
    {"avx2_bf16x16", interleaved(DType::kBF16), Isa::kAvx2, kBf16, kAnyCpu, x86::matmul_bf16x16_avx2, pack_x_bf16_reference,
     bf16_activation_bytes},
    {"avx512_bf16x16_dpbf16", interleaved(DType::kBF16), Isa::kAvx512, kBf16, kDpbf16, x86::matmul_bf16x16_dpbf16_avx512,
     x86::pack_x_bf16_avx512, bf16_activation_bytes},
    {"amx_bf16x16", interleaved(DType::kBF16), Isa::kAmx, kBf16, kDpbf16, x86::matmul_bf16x16_amx, x86::pack_x_bf16_avx512,
     bf16_activation_bytes},
    // Interleaved f16x16 (interleaved_blocks.h): f32 activations.
    {"reference_f16x16", interleaved(DType::kF16), Isa::kScalar, kF32, kAnyCpu, matmul_f16x16_reference},
    {"avx2_f16x16", interleaved(DType::kF16), Isa::kAvx2, kF32, kAnyCpu, x86::avx2::matmul_f16x16},
    {"avx512_f16x16", interleaved(DType::kF16), Isa::kAvx512, kF32, kAnyCpu, x86::avx512::matmul_f16x16},
    // W8A8 (lemma_int_blocks.h) quantises x itself: the dtype, not MatmulPrecision, selects int8 x.
    {"reference_w8a8", DType::kW8A8, Isa::kScalar, kF32, kAnyCpu, matmul_w8a8_reference},
    {"avx2_w8a8", DType::kW8A8, Isa::kAvx2, kF32, kAnyCpu, x86::matmul_w8a8_avx2},
    {"avx512_vnni_w8a8", DType::kW8A8, Isa::kAvx512, kF32, kVnni, x86::matmul_w8a8_avx512vnni},
    {"reference_w8a8x16", interleaved(DType::kW8A8), Isa::kScalar, kInt8, kAnyCpu, matmul_w8a8x16_reference,
     quantize_w8a8_signed_activations_reference, w8a8_signed_activation_bytes},
    {"avx2_w8a8x16", interleaved(DType::kW8A8), Isa::kAvx2, kInt8, kAnyCpu, x86::matmul_w8a8x16_avx2,
     x86::avx2::quantize_w8a8_signed_activations, w8a8_signed_activation_bytes},
    {"avx512_vnni_w8a8x16", interleaved(DType::kW8A8), Isa::kAvx512, kInt8, kVnni, x86::matmul_w8a8x16_avx512vnni,
     x86::avx512::quantize_w8a8_signed_activations, w8a8_signed_activation_bytes},
    // int8 activations (int8_activations.h, q8k_activations.h, interleaved_blocks.h).
    LEMMA_INT8_BLOCK_FORMATS(LEMMA_BLOCK_INT8_ROWS)
    LEMMA_INT8_KQUANT_FORMATS(LEMMA_KQUANT_INT8_ROWS)
    LEMMA_INTERLEAVED_SIGNED_FORMATS(LEMMA_SIGNED_INT8_ROWS)
    LEMMA_INTERLEAVED_KQUANT_FORMATS(LEMMA_INTERLEAVED_KQUANT_ROWS)
    LEMMA_INTERLEAVED_AMX_FORMATS(LEMMA_AMX_INT8_ROWS)
};
constexpr size_t kKernelCount = sizeof(kKernels) / sizeof(kKernels[0]);

constexpr size_t kLoggedWords = (kKernelCount + 63) / 64;

// Logs each kernel's first use at debug level.
void log_choice(const MatmulKernel& kernel, Isa isa) {
  static std::atomic<uint64_t> logged_words[kLoggedWords] = {};
  const auto index = static_cast<size_t>(&kernel - kKernels);
  std::atomic<uint64_t>& logged = logged_words[index / 64];
  const uint64_t bit = uint64_t{1} << (index % 64);
  // A plain load first: an unconditional read-modify-write would bounce the cache line between cores.
  if ((logged.load(std::memory_order_relaxed) & bit) == 0 &&
      (logged.fetch_or(bit, std::memory_order_relaxed) & bit) == 0) {
    log().debug("kernels: matmul {} weights -> {} (ISA {})", format_name(kernel.weight), kernel.name,
                isa_name(isa));
  }
}

}  // namespace

std::span<const MatmulKernel> matmul_kernels() { return {kKernels, kKernelCount}; }

const MatmulKernel* find_matmul_kernel(MatrixFormat weight, int64_t K, Isa isa, MatmulPrecision precision, int64_t M) {
  if (weight.dtype >= DType::kCount) return nullptr;
  const int64_t block = format_block_values(weight);
  if (block == 0 || K % block != 0) return nullptr;
  const MatmulKernel* kernel = kernel_set(isa).matmul(weight, precision, M);
  if (kernel != nullptr) log_choice(*kernel, isa);
  return kernel;
}

std::string_view kernel_name_for(MatrixFormat weight, int64_t K, Isa isa, MatmulPrecision precision, int64_t M) {
  const MatmulKernel* kernel = find_matmul_kernel(weight, K, isa, precision, M);
  return kernel != nullptr ? kernel->name : std::string_view{};
}

}  // namespace lemma::kernels
