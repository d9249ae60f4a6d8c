// The matmul kernel table: which implementation runs for a weight dtype, ISA, precision and K.
// One row per kernel (registry.cpp); lookups take the highest-ISA row the request allows and fall
// back to the scalar reference. Read-only after static initialisation; thread-safe.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "lemma/kernels/int8_activations.h"
#include "lemma/kernels/isa.h"
#include "lemma/kernels/matmul_args.h"
#include "lemma/tensor/dtype.h"

namespace lemma::kernels {

enum class MatmulPrecision : uint8_t {
  kF32Activations,   // default: x stays f32, weights widened to f32, f32 FMA accumulation
  kBf16Activations,  // opt-in: x rounded to bf16 (vdpbf16ps); only bf16 weights with AVX512_BF16,
                     // otherwise falls back to kF32Activations
  kInt8Activations,  // x quantised to int8 as llama.cpp's vec_dot_type does: per 32-value block
                     // for Q8_0/Q4_0/Q5_0 weights (int8_activations.h), per 256-value block with
                     // code sums for the K-quants Q2_K..Q6_K (q8k_activations.h); the default for
                     // them from AVX2 up (matmul_precision.h), otherwise falls back to kF32Activations
};

using MatmulFn = void (*)(const MatmulArgs& args);
// Bytes of the prepared x (MatmulArgs::xq) for M rows of K values, in a kernel's activation format.
using ActivationBytesFn = size_t (*)(int64_t M, int64_t K);

struct MatmulKernel {
  std::string_view name;  // e.g. "avx512_f32", "reference_q4_k"
  DType weight;
  Isa isa;  // the lowest ISA it runs on
  MatmulPrecision precision;
  bool needs_avx512_bf16;  // extra CPU feature beyond `isa`
  MatmulFn fn;
  // Set for kernels that read x quantised (MatmulArgs::xq): writes that buffer, once per call.
  QuantizeActivationsFn quantize_x = nullptr;
  // That buffer's size; set with quantize_x. Every format holds x row by row, xq_bytes(1, K) bytes per
  // row, so that rows can be written apart (MatmulPlan::xq_row_bytes, kernels::prepare_activation_rows).
  ActivationBytesFn xq_bytes = nullptr;
};

// Every registered kernel, for `inspect` and tests.
std::span<const MatmulKernel> matmul_kernels();

// The kernel matmul() runs for these arguments under `isa`; nullptr when the dtype has no kernel
// or K is not a whole number of its blocks.
const MatmulKernel* find_matmul_kernel(DType weight, int64_t K, Isa isa,
                                       MatmulPrecision precision = MatmulPrecision::kF32Activations);

// find_matmul_kernel()'s name, or "" when there is none.
std::string_view kernel_name_for(DType weight, int64_t K, Isa isa,
                                 MatmulPrecision precision = MatmulPrecision::kF32Activations);
// The same under active_isa() and the default precision (matmul_precision.h).
std::string_view kernel_name_for(DType weight, int64_t K);

}  // namespace lemma::kernels
