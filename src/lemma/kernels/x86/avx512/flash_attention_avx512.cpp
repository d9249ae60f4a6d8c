// Flash-attention split kernel with AVX-512 (see flash_attention.h and, for how it works,
// x86/avx512/flash_split_avx512.h).
#include "lemma/kernels/attention/flash_attention_isa.h"
#include "lemma/kernels/x86/avx512/flash_split_avx512.h"

namespace lemma::kernels::x86 {

void flash_split_avx512(const FlashSplitArgs& a) { flash_split_all_dtypes(a); }

}  // namespace lemma::kernels::x86
