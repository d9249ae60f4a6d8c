// The matmul kernel table: which implementation runs for a weight dtype, ISA, precision, K and M.
// One row per kernel, generated from the families in matmul_families.h (registry.cpp); the choice
// for each (ISA, dtype, precision) is resolved once (kernel_set.h). Read-only; thread-safe.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "lemma/kernels/int8_activations.h"
#include "lemma/kernels/isa.h"
#include "lemma/kernels/matmul_args.h"
#include "lemma/kernels/matrix_format.h"
#include "lemma/kernels/matmul_precision.h"
#include "lemma/tensor/dtype.h"

namespace lemma::kernels {

using MatmulFn = void (*)(const MatmulArgs& args);
// Bytes of the prepared x (MatmulArgs::xq) for M rows of K values, in a kernel's activation format.
using ActivationBytesFn = size_t (*)(int64_t M, int64_t K);

// A CPU feature a kernel needs beyond its `isa` (isa.h's CpuFeatures).
enum class CpuFeature : uint8_t { kNone, kAvx512Bf16, kAvx512Vnni };

struct MatmulKernel {
  std::string_view name;  // e.g. "avx512_f32", "reference_q4_k"
  MatrixFormat weight;
  Isa isa;  // the lowest ISA it runs on
  MatmulPrecision precision;
  CpuFeature needs = CpuFeature::kNone;
  MatmulFn fn = nullptr;
  // Set for kernels that read x quantised (MatmulArgs::xq): writes that buffer, once per call.
  QuantizeActivationsFn quantize_x = nullptr;
  // That buffer's size; set with quantize_x. Every format holds x row by row, xq_bytes(1, K) bytes per
  // row, so that rows can be written apart (MatmulPlan::xq_row_bytes, kernels::prepare_activation_rows).
  ActivationBytesFn xq_bytes = nullptr;
  // Chosen only for at least this many rows of x (kernel_policy.h: where AMX tiles pay off); below,
  // the next row of the same (dtype, precision) runs, with the same bits.
  int64_t min_rows = 0;
};

// Whether this machine can run the kernel (its ISA and extra feature).
bool runs_here(const MatmulKernel& kernel);

// Every registered kernel, for `inspect` and tests.
std::span<const MatmulKernel> matmul_kernels();

// The kernel matmul() runs for these arguments under `isa` with M rows of x: among the rows for
// (weight, precision) that this machine runs, the highest-ISA one whose min_rows <= M, falling back to
// f32 activations when no row has `precision`; nullptr when the dtype has no kernel or K is not a
// whole number of its blocks. O(1): the choices are resolved once per ISA (kernel_set.h).
const MatmulKernel* find_matmul_kernel(MatrixFormat weight, int64_t K, Isa isa,
                                       MatmulPrecision precision = MatmulPrecision::kF32Activations,
                                       int64_t M = INT64_MAX);

// find_matmul_kernel()'s name, or "" when there is none.
std::string_view kernel_name_for(MatrixFormat weight, int64_t K, Isa isa,
                                 MatmulPrecision precision = MatmulPrecision::kF32Activations, int64_t M = INT64_MAX);

}  // namespace lemma::kernels
