// x rounded to bf16 once per matmul call for the bf16-activation kernels (MatmulPrecision::
// kBf16Activations with bf16 weights: vdpbf16ps). Rounding is vcvtne2ps2bf16's: round to nearest
// even, NaN kept quiet, subnormal inputs flushed to +-0.
//
// Buffer layout (what MatmulArgs::xq points at), for M rows of K values: M rows of
// bf16_x_stride(K) bf16 values (K rounded up to 32, so a row is whole 64-byte vectors); the values
// past K are +0, so kernels read x without masks (they still mask W, whose rows are not padded).
// The buffer must be 64-byte aligned. Plain `static` helpers (see x86/x86_kernels.h on why).
#pragma once

#include <cstddef>
#include <cstdint>

namespace lemma::kernels {

static constexpr int64_t bf16_x_stride(int64_t K) { return (K + 31) / 32 * 32; }
static constexpr size_t bf16_activation_bytes(int64_t M, int64_t K) {
  return static_cast<size_t>(M * bf16_x_stride(K) * 2);
}

}  // namespace lemma::kernels
