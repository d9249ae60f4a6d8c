// The bf16x16 kernel on the AMX tiles (compiled with -mamx-tile -mamx-int8 -mamx-bf16 and the
// AVX-512 flags; run only where cpu_features().amx).
#include "lemma/kernels/x86/amx/amx_bf16.h"
#include "lemma/kernels/x86/amx/bf16x16_amx_kernel.h"
#include "lemma/kernels/x86/amx/tiles_hardware.h"

namespace lemma::kernels::x86 {

void matmul_bf16x16_amx(const MatmulArgs& args) { amx::matmul_bf16x16<amx::HardwareTiles>(args); }

}  // namespace lemma::kernels::x86
