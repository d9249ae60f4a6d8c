// The plain argument block every matmul kernel receives (after matmul() validated the shapes).
// y[m, n] = sum_k x[m, k] * W[n, k] (+ bias[n]); W's rows are `w_row_bytes` apart.
// Plain data, no inline code (x86 ISA files include it; see x86/x86_kernels.h).
#pragma once

#include <cstdint>

namespace lemma::kernels {

class KernelScratch;  // kernel_scratch.h

struct MatmulArgs {
  const float* x = nullptr;  // [M, K], rows x_stride floats apart
  int64_t x_stride = 0;
  const void* w = nullptr;  // [N, K] in the weight dtype, rows w_row_bytes apart
  int64_t w_row_bytes = 0;
  const float* bias = nullptr;  // [N] or null
  float* y = nullptr;           // [M, N], rows y_stride floats apart
  int64_t y_stride = 0;
  int64_t M = 0;
  int64_t N = 0;
  int64_t K = 0;
  // x quantised for an int8-activation kernel (int8_activations.h), written once per call before
  // the kernel runs (MatmulPlan::prepare); null for every other kernel.
  const void* xq = nullptr;
  // The calling thread's scratch for kernels that stage data (the AMX-INT8 panel); null: such a
  // kernel uses its own for this call. Other kernels ignore it.
  KernelScratch* scratch = nullptr;
};

}  // namespace lemma::kernels
