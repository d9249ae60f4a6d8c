#include "lemma/kernels/matmul_precision.h"

#include <cstdlib>
#include <string_view>

#include "lemma/base/error.h"
#include "lemma/base/logging.h"
#include "lemma/kernels/interleaved_blocks.h"

namespace lemma::kernels {

namespace {

// True when LEMMA_MATMUL_PRECISION=f32 asks for f32 activations everywhere.
bool forced_f32() {
  const char* env = std::getenv("LEMMA_MATMUL_PRECISION");
  const std::string_view value = env != nullptr ? env : "";
  if (value.empty() || value == "auto") return false;
  if (value == "f32") {
    log().info("kernels: f32 activations for every matmul (LEMMA_MATMUL_PRECISION=f32)");
    return true;
  }
  fail<InvalidArgument>("LEMMA_MATMUL_PRECISION={} is not one of f32, auto", value);
}

}  // namespace

bool matmul_precision_forced_f32() {
  static const bool f32_only = forced_f32();
  return f32_only;
}

MatmulPrecision default_matmul_precision(DType weight, Isa isa) {
  // A throwing initialiser is retried on the next call, so a bad value fails every matmul.
  // Interleaved blocks have int8-activation kernels only (Model makes them only when int8 is the default).
  // bf16x16 has bf16-activation kernels only (Model makes it only where they are the default).
  if (weight == DType::kBF16x16) return MatmulPrecision::kBf16Activations;
  if (weight == DType::kF16x16) return MatmulPrecision::kF32Activations;  // f16x16: f32 x, as plain f16
  if (is_interleaved(weight)) return MatmulPrecision::kInt8Activations;
  static const bool f32_only = forced_f32();
  if (f32_only) return MatmulPrecision::kF32Activations;
  switch (weight) {
    // llama.cpp's vec_dot_type for these is Q8_0: x in int8 blocks of 32, integer dot products.
    // The scalar ISA keeps f32 (it has no fast integer path; it is the oracle for the f32 kernels).
    case DType::kQ8_0:
    case DType::kQ4_0:
    case DType::kQ5_0:
    // For these it is Q8_K: int8 blocks of 256 with 16-value code sums (q8k_activations.h).
    case DType::kQ4_K:
    case DType::kQ5_K:
    case DType::kQ6_K:
    case DType::kQ2_K:
    case DType::kQ3_K:
      return isa >= Isa::kAvx2 ? MatmulPrecision::kInt8Activations : MatmulPrecision::kF32Activations;
    // llama.cpp also rounds x to bf16 for bf16 weights; vdpbf16ps then does two products per lane.
    case DType::kBF16:
      return isa >= Isa::kAvx512 && cpu_features().avx512_bf16 ? MatmulPrecision::kBf16Activations
                                                                : MatmulPrecision::kF32Activations;
    default:
      return MatmulPrecision::kF32Activations;
  }
}

}  // namespace lemma::kernels
