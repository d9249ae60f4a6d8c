// The vector layer of the translation unit being compiled. Each source in x86/simd/ is compiled once
// per ISA (src/lemma/kernels/CMakeLists.txt defines LEMMA_SIMD_AVX2, LEMMA_SIMD_AVX512 or
// LEMMA_SIMD_AVX512BF16 with that ISA's flags): there `Vec` is the ISA's traits struct and `simd`
// the namespace the kernels are defined in (x86::avx2, x86::avx512 or x86::avx512_bf16, declared in
// x86/simd/simd_kernels.h), so one kernel source yields one copy per ISA under its own names.
#pragma once

#include "lemma/kernels/x86/simd/simd_kernels.h"

#if defined(LEMMA_SIMD_AVX512) || defined(LEMMA_SIMD_AVX512BF16)
#include "lemma/kernels/x86/vec/vec_avx512.h"
namespace lemma::kernels::x86 {
using Vec = VecAvx512;
#if defined(LEMMA_SIMD_AVX512BF16)
namespace simd = avx512_bf16;
#else
namespace simd = avx512;
#endif
}  // namespace lemma::kernels::x86
#elif defined(LEMMA_SIMD_AVX2)
#include "lemma/kernels/x86/vec/vec_avx2.h"
namespace lemma::kernels::x86 {
using Vec = VecAvx2;
namespace simd = avx2;
}  // namespace lemma::kernels::x86
#else
#error "x86/simd/ sources are compiled per ISA by src/lemma/kernels/CMakeLists.txt (LEMMA_SIMD_<ISA>)"
#endif
