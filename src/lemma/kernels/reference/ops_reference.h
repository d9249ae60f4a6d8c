// Scalar reference implementations of the row ops in ops.h (the oracles the vector versions are
// tested against). Raw pointers so the ISA dispatch table can hold them next to the x86 ones.
#pragma once

#include <cstdint>

namespace lemma::kernels {

void rmsnorm_reference(const float* x, const float* weight, float eps, float* y, int64_t n);
void add_rmsnorm_reference(float* residual, const float* delta, const float* weight, float eps, float* y, int64_t n);
void silu_mul_reference(const float* gate, const float* up, float* out, int64_t n);
void softmax_reference(const float* x, float* y, int64_t n);
void add_reference(const float* a, const float* b, float* out, int64_t n);
void exp_reference(const float* x, float* y, int64_t n);

}  // namespace lemma::kernels
