#include "lemma/kernels/kernel_policy.h"

#include "lemma/kernels/interleaved_blocks.h"

namespace lemma::kernels {

MatmulPrecision default_matmul_precision(MatrixFormat weight, Isa isa, ActivationPolicy policy, const CpuFeatures& features) {
  // The interleaved forms have kernels of one precision only (the model makes them only where that is the default).
  if (weight.interleaved()) {
    if (weight.dtype == DType::kBF16) return MatmulPrecision::kBf16Activations;
    if (weight.dtype == DType::kF16) return MatmulPrecision::kF32Activations;
    return MatmulPrecision::kInt8Activations;
  }
  if (policy == ActivationPolicy::kF32) return MatmulPrecision::kF32Activations;
  switch (weight.dtype) {
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
      return isa >= Isa::kAvx512 && features.avx512_bf16 ? MatmulPrecision::kBf16Activations
                                                          : MatmulPrecision::kF32Activations;
    default:
      return MatmulPrecision::kF32Activations;
  }
}

bool interleave_pays(DType plain, Isa isa, ActivationPolicy policy) {
  if (isa < Isa::kAvx2) return false;
  const bool int8_allowed = policy != ActivationPolicy::kF32;
  switch (plain) {
    // bf16x16 runs with bf16 activations (vdpbf16ps, or its bits by AVX2 FMAs), also where plain bf16
    // matrices keep f32 activations (AVX2 without AVX512_BF16).
    case DType::kBF16: return int8_allowed;
    // f16x16 keeps f32 activations, as plain f16 does: the policy does not concern it.
    case DType::kF16: return true;
    // W8A8 always quantises x (its format's rule); W8A8x16 has AVX2 and AVX-512 VNNI kernels.
    case DType::kW8A8: return true;
    // Only the interleaved forms of these read int8 x; in the file's layout they keep f32 x.
    case DType::kI8Z32:
    case DType::kI4Z32:
    case DType::kIQ4_NL:
    case DType::kIQ4_XS:
    case DType::kQ4_1:
    case DType::kQ5_1: return int8_allowed;
    // Every other int8 x16 form has an AVX2 kernel (vpmaddubsw) besides the AVX-512 VNNI one.
    default:
      return has_interleaved_form(plain) &&
             default_matmul_precision(plain, isa, policy) == MatmulPrecision::kInt8Activations;
  }
}

}  // namespace lemma::kernels
