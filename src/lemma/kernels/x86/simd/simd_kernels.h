// Declarations of the width-generic kernels (x86/simd/, written once over the vector layer x86/vec/):
// the same list in x86::avx2 and x86::avx512, one definition per ISA from the same source. Only the
// dispatchers (ops.cpp, vocab_ops.cpp, convert.cpp, dequantize_dispatch.cpp, registry.cpp,
// attention/flash_attention.cpp) call them; each needs its ISA (isa.h). No inline code here.
#pragma once

#include <cstdint>

#include "lemma/kernels/attention/flash_split_args.h"
#include "lemma/kernels/matmul_args.h"

namespace lemma::kernels::x86 {

// Decodes n stored values (whole blocks) to f32; the same type as DequantizeFn, restated here so
// the ISA files need not include dtype headers with inline code.
using RowDecoder = void (*)(const void* src, float* dst, int64_t n);

namespace avx2 {
#include "lemma/kernels/x86/simd/simd_kernel_list.inc"
}  // namespace avx2

namespace avx512 {
#include "lemma/kernels/x86/simd/simd_kernel_list.inc"
}  // namespace avx512

// The flash split kernel once more with AVX512_BF16: a bf16 cache's q . k by vdpbf16ps.
namespace avx512_bf16 {
void flash_split(const FlashSplitArgs& args);
}  // namespace avx512_bf16

}  // namespace lemma::kernels::x86
