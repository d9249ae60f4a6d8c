// Scalar references of the vocabulary passes in vocab_ops.h (the oracles the vector versions are
// tested against). Raw pointers so the ISA dispatch table can hold them next to the x86 ones.
#pragma once

#include <cstdint>

namespace lemma::kernels {

int64_t copy_masking_nan_reference(const float* x, float* y, int64_t n);
float max_ignoring_nan_reference(const float* x, int64_t n);
int64_t argmax_first_reference(const float* x, int64_t n);
void divide_row_reference(const float* x, float divisor, float* y, int64_t n);
double exp_block_sums_reference(const float* x, float shift, float* w, double* block_sums, int64_t n);
// The block sums of exp_block_sums over given weights (its order), for tests of the vector sums.
double block_sums_of_weights(const float* w, double* block_sums, int64_t n);
int64_t first_above_reference(const float* x, float threshold, int64_t n);
int64_t select_at_least_reference(const float* x, float threshold, int32_t* ids, int64_t n);

}  // namespace lemma::kernels
