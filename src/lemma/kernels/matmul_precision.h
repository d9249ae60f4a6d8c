// The MatmulPrecision a matmul runs with when its caller does not choose one (MatmulOptions::precision
// unset): per weight dtype and ISA, the fastest path whose accuracy the project accepts (the
// perplexity gates in tests/unit/quant). LEMMA_MATMUL_PRECISION=f32 forces kF32Activations
// everywhere (the old f32-activation paths, for comparison); a value that is not f32 or auto is an
// InvalidArgument naming the variable. Thread-safe.
#pragma once

#include "lemma/kernels/isa.h"
#include "lemma/kernels/registry.h"
#include "lemma/tensor/dtype.h"

namespace lemma::kernels {

// Whether LEMMA_MATMUL_PRECISION=f32 forces f32 activations everywhere (read once).
bool matmul_precision_forced_f32();
MatmulPrecision default_matmul_precision(DType weight, Isa isa);

}  // namespace lemma::kernels
