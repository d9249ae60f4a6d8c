// The one policy table of the kernels: for a weight dtype and ISA, which activation precision a
// matmul uses by default, whether the model re-lays the matrix in a 16-row interleaved form, and
// from how many rows of x the AMX tiles take over. Pure functions of their arguments (the settings
// come from the caller's RuntimeOptions, never from the environment); thread-safe.
#pragma once

#include <cstdint>

#include "lemma/kernels/isa.h"
#include "lemma/kernels/matmul_precision.h"
#include "lemma/kernels/matrix_format.h"
#include "lemma/tensor/dtype.h"

namespace lemma::kernels {

// What the caller allows for activations: kAuto picks the fastest precision whose accuracy the
// project accepts (the perplexity gates in tests/unit/quant); kF32 keeps x in f32 everywhere (the
// plain f32-activation paths, for comparison; `--matmul-precision f32`).
enum class ActivationPolicy : uint8_t { kAuto, kF32 };

// The precision a matmul over `weight` runs with under `isa` when its caller does not choose one.
// `features` defaults to this machine's (tests pass others).
MatmulPrecision default_matmul_precision(MatrixFormat weight, Isa isa, ActivationPolicy policy = ActivationPolicy::kAuto,
                                         const CpuFeatures& features = cpu_features());

// Whether a matrix stored as `plain` is worth re-laying in its interleaved (*x16) form under `isa`
// and `policy`: only where an interleaved kernel runs at that ISA with the precision the plain
// layout would get (or better, for formats whose plain layout has no int8 kernel).
bool interleave_pays(DType plain, Isa isa, ActivationPolicy policy);

// Rows of x from which the AMX-INT8 kernel runs for an interleaved int8 format (of `plain` values); below, the VNNI
// kernel (faster there, same bits). Q8_0x16 stages one-group panels that pay from 32 rows; the
// nibble forms unpack their codes while staging, which only 128 rows repay.
constexpr int64_t amx_min_rows(DType plain) { return plain == DType::kQ8_0 ? 32 : 128; }

}  // namespace lemma::kernels
