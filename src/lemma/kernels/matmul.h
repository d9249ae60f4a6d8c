// The model's main op: y[M, N] = x[M, K] . W[N, K]^T (+ bias[N]), x and y f32, W any dtype the
// registry knows: f32/f16/bf16 (AVX2/AVX-512 tiles), Q4_0/Q4_1/Q5_0/Q5_1/Q8_0/Q2_K..Q6_K
// (each W row decoded 256 values at a time, bit-exactly as ggml, then vector FMAs; never the whole
// matrix), all with a scalar reference for Isa::kScalar.
// Batch invariant: for one ISA and precision, row m of y is bitwise the same whatever M is and
// whatever the other rows of x hold (decode M=1 == prefill row). Also invariant to splitting N
// (pass a view of a row range of W), so callers may parallelise over N. Thread-safe; no allocation.
#pragma once

#include <cstdint>
#include <optional>

#include "lemma/kernels/isa.h"
#include "lemma/kernels/registry.h"
#include "lemma/tensor/tensor_view.h"

namespace lemma::kernels {

struct MatmulOptions {
  std::optional<Isa> isa;  // default active_isa(); must be one of available_isas()
  MatmulPrecision precision = MatmulPrecision::kF32Activations;
};

// x: [M, K] with rows x_stride floats apart; w: rank-2 [N, K] (contiguous rows of K values);
// y: [M, N] with rows y_stride floats apart; bias: [N] or null. y must not overlap x, w or bias.
// Throws InvalidArgument on inconsistent shapes/strides or an unavailable ISA, Unsupported for a
// weight dtype (or K not a whole number of blocks) no kernel handles; y is untouched then.
void matmul(const float* x, int64_t x_stride, int64_t M, const TensorView& w, float* y,
            int64_t y_stride, const float* bias = nullptr, const MatmulOptions& options = {});

// matmul() in two halves: validate the arguments and resolve the kernel once, then run ranges of
// W's rows (e.g. one per tile of a thread team). Any split of [0, N) gives matmul()'s bits.
struct MatmulPlan {
  MatmulFn fn = nullptr;  // null when M or N is 0 (nothing to run)
  MatmulArgs args;        // for all N rows of W

  // Outputs n in [n0, n1) of every row of x; 0 <= n0 <= n1 <= N. Thread-safe; no allocation.
  void run_rows(int64_t n0, int64_t n1) const;
};

// Throws exactly as matmul() does; y is untouched until run_rows().
MatmulPlan plan_matmul(const float* x, int64_t x_stride, int64_t M, const TensorView& w, float* y,
                       int64_t y_stride, const float* bias = nullptr, const MatmulOptions& options = {});

}  // namespace lemma::kernels
