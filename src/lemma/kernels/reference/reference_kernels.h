// The scalar reference matmul: the oracle for every optimised kernel and the fallback for dtypes
// without one. Each W row is dequantised a chunk (<= 256 values, whole blocks) at a time into a
// stack buffer and dotted with up to 16 rows of x; each y[m, n] is one float accumulated over k in
// increasing order, so results do not depend on M (batch invariant). No allocation; thread-safe.
#pragma once

#include "lemma/kernels/matmul_args.h"
#include "lemma/tensor/dtype.h"

namespace lemma::kernels {

void matmul_reference(DType weight, const MatmulArgs& args);

}  // namespace lemma::kernels
