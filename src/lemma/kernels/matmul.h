// The model's main op: y[M, N] = x[M, K] . W[N, K]^T (+ bias[N]), x and y f32, W any dtype the
// registry knows: f32/f16/bf16 (AVX2/AVX-512 tiles), Q4_0/Q4_1/Q5_0/Q5_1/Q8_0/Q2_K..Q6_K
// (each W row decoded 256 values at a time, bit-exactly as ggml, then vector FMAs; never the whole
// matrix), all with a scalar reference for Isa::kScalar. Q8_0/Q4_0/Q5_0 and Q2_K..Q6_K default to
// int8 activations from AVX2 up (x quantised once per call, integer block dot products;
// int8_activations.h, q8k_activations.h).
// Batch invariant: for one ISA and precision, row m of y is bitwise the same whatever M is and
// whatever the other rows of x hold (decode M=1 == prefill row). Also invariant to splitting N
// (pass a view of a row range of W), so callers may parallelise over N. Thread-safe; allocates only
// to grow the caller's ActivationBuffer for quantised x (prepare_activations).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

#include "lemma/kernels/isa.h"
#include "lemma/kernels/kernel_policy.h"
#include "lemma/kernels/kernel_scratch.h"
#include "lemma/kernels/registry.h"
#include "lemma/tensor/tensor_view.h"

namespace lemma::kernels {

struct MatmulOptions {
  std::optional<Isa> isa;  // default detected_isa(); must be one of available_isas()
  // default default_matmul_precision(dtype, isa, activations) (kernel_policy.h)
  std::optional<MatmulPrecision> precision = std::nullopt;
  ActivationPolicy activations = ActivationPolicy::kAuto;
};

// The caller's buffer for x prepared for the kernels (quantised to int8, rounded to bf16): grow-only
// aligned bytes like a kernel's scratch, so steady-state calls allocate nothing. A forward keeps one
// in its workspace. Not thread-safe; prepared x lives there until the next prepare.
using ActivationBuffer = KernelScratch;

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
  // Set when the kernel reads x quantised (args.xq): prepare_activations() must run first.
  QuantizeActivationsFn quantize_x = nullptr;
  size_t xq_bytes = 0;  // the size of that buffer (int8_activations.h, q8k_activations.h, bf16_activations.h)
  // Bytes per row of x in that buffer (every format holds x row by row: bf16, int8 and Q8_K
  // activations), so that rows can be prepared in parallel (reserve_activations).
  size_t xq_row_bytes = 0;
  // run_rows() ranges must start on a multiple of this (16 for interleaved weights, whose rows come
  // in groups: interleaved_blocks.h); 1 otherwise.
  int64_t row_group = 1;

  // Outputs n in [n0, n1) of every row of x; 0 <= n0 <= n1 <= N, n0 a multiple of row_group.
  // `scratch`: the calling thread's (a team keeps one per worker), lent to kernels that stage data
  // (the AMX-INT8 panel); null makes such a kernel allocate its own for this call. Thread-safe for
  // distinct scratches; no allocation once `scratch` has grown to what the kernel needs.
  void run_rows(int64_t n0, int64_t n1, KernelScratch* scratch = nullptr) const;
};

// Throws exactly as matmul() does; y is untouched until run_rows().
MatmulPlan plan_matmul(const float* x, int64_t x_stride, int64_t M, const TensorView& w, float* y,
                       int64_t y_stride, const float* bias = nullptr, const MatmulOptions& options = {});

// Quantises x once for every plan in `plans` that needs it (plans over the same x, M and K with the
// same quantiser share one copy: q/k/v or gate/up read one x), into `buffer`. The next prepare into
// that buffer reuses it: finish running these plans first. Plans that need nothing are left alone.
void prepare_activations(std::span<MatmulPlan> plans, ActivationBuffer& buffer);

// prepare_activations() in two halves, so that several threads can fill the rows: points every plan
// that needs it at its buffer (shared as above) without filling it, and returns true; or does
// nothing and returns false when no plan needs prepared x.
bool reserve_activations(std::span<MatmulPlan> plans, ActivationBuffer& buffer);
// Then rows [m0, m1) of x, for each plan whose buffer no earlier plan in `plans` shares.
// Thread-safe for disjoint row ranges; no allocation.
void prepare_activation_rows(std::span<const MatmulPlan> plans, int64_t m0, int64_t m1);

}  // namespace lemma::kernels
