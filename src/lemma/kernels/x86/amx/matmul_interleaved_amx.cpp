// The interleaved int8 kernels on the AMX tiles (compiled with -mamx-tile -mamx-int8 -mamx-bf16 and
// the AVX-512 flags; run only where cpu_features().amx).
#include "lemma/kernels/x86/amx/amx_int8.h"
#include "lemma/kernels/x86/amx/interleaved_amx_kernel.h"
#include "lemma/kernels/x86/amx/lanes_avx512.h"
#include "lemma/kernels/x86/amx/tiles_hardware.h"

namespace lemma::kernels::x86 {

#define LEMMA_DEFINE_AMX_KERNEL(name, codes) \
  void matmul_##name##_int8_amx(const MatmulArgs& args) { amx::matmul_interleaved<amx::HardwareTiles, amx::Avx512Lanes, amx::codes>(args); }
LEMMA_AMX_INT8_CODES(LEMMA_DEFINE_AMX_KERNEL)
#undef LEMMA_DEFINE_AMX_KERNEL

}  // namespace lemma::kernels::x86
