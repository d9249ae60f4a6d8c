// Encoding of KV cache rows (G23): one (token, KV head) row of head_dim floats becomes head_dim
// elements of the cache's KvDtype, plus one f32 scale for int8 and fp8 (absmax / 127 and
// absmax / 448: the row's largest magnitude maps to the format's largest code). Written when a
// token is appended; the attention kernels read the codes directly (flash_attention.h).
// A row holding NaN or infinity gets scale NaN (and zero codes), so it reads back as NaN, as an
// f32 cache would propagate it. Pure functions; thread-safe.
#pragma once

#include <cstdint>

#include "lemma/kernels/attention/kv_dtype.h"

namespace lemma::kernels {

// Writes n values of x as `dtype` elements to dst; int8/fp8 also write the row's scale to *scale
// (f32/bf16 leave it alone; it may be null for them). bf16 rounds to nearest even.
void kv_encode_row(KvDtype dtype, const float* x, int64_t n, void* dst, float* scale);

// out[d] = element d of a stored row times `scale` for int8/fp8 (ignored for f32/bf16): what the
// attention kernels see.
void kv_decode_row(KvDtype dtype, const void* row, float scale, int64_t n, float* out);

// e4m3 ("fn": bias 7, subnormals, no infinities, 0x7F/0xFF NaN, largest finite 448).
float e4m3_to_float(uint8_t code);
// Round to nearest even; magnitudes beyond 448 saturate to +-448; NaN -> 0x7F (sign kept).
uint8_t float_to_e4m3(float x);

}  // namespace lemma::kernels
