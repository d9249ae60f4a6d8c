// The bf16-cache flash split kernel on the AMX tiles (compiled with -mamx-tile -mamx-int8 -mamx-bf16
// and the AVX-512 flags; run only where cpu_features().amx).
#include "lemma/kernels/attention/flash_attention_isa.h"
#include "lemma/kernels/x86/amx/flash_split_amx_kernel.h"
#include "lemma/kernels/x86/amx/tiles_hardware.h"

namespace lemma::kernels::x86 {

void flash_split_amx_bf16(const FlashSplitArgs& args) { amx::flash_split_bf16<amx::HardwareTiles>(args); }

}  // namespace lemma::kernels::x86
