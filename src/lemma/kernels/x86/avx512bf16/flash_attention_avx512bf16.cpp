// Flash-attention split kernel with AVX-512 + AVX512_BF16 (see flash_attention.h and
// x86/avx512/flash_split_avx512.h): the plain AVX-512 kernel, except that a bf16 cache's q . k
// runs on vdpbf16ps.
#include "lemma/kernels/attention/flash_attention_isa.h"
#include "lemma/kernels/x86/avx512/flash_split_avx512.h"

namespace lemma::kernels::x86 {

void flash_split_avx512_bf16(const FlashSplitArgs& a) { flash_split_all_dtypes(a); }

}  // namespace lemma::kernels::x86
