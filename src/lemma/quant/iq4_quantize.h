// f32 -> GGUF IQ4_NL / IQ4_XS blocks (kernels/quant_blocks.h), lemma's own quantizer: the blocks
// follow the format exactly, so every GGUF reader decodes them, but the codes are not llama.cpp's
// (its quantizer weights the error by x^2 or an importance matrix; this one by |x|, without one).
// Pure functions over caller-owned memory; thread-safe.
#pragma once

#include <cstdint>

namespace lemma::quant {

// Per block of 32: for 41 trial scales that put the value of largest magnitude at -147 .. -107
// (around the table's -127 end), codes = nearest table value of x / scale, then the least-squares
// scale for those codes with weights |x|; the trial with the smallest weighted squared error wins,
// its scale is stored as f16 and every code is re-chosen against that stored scale. `n` is a
// multiple of 32.
void quantize_row_iq4_nl(const float* src, void* dst, int64_t n);
// Per block of 256: each sub-block of 32's best scale as IQ4_NL's; the block scale d puts the
// sub-block scale of largest magnitude on -32 (the 6-bit range's long end), each sub-block's scale
// becomes round(s / d) + 32 clamped to 0..63, and its codes are re-chosen against d * (ls - 32)
// with d as stored (f16). `n` is a multiple of 256.
void quantize_row_iq4_xs(const float* src, void* dst, int64_t n);

}  // namespace lemma::quant
