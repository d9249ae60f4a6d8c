// The same kernel on the plain C++ tile emulator (AVX-512 flags only; tests run it on any CPU with
// AVX-512, AMX or not).
#include "lemma/kernels/attention/flash_attention_isa.h"
#include "lemma/kernels/x86/amx/flash_split_amx_kernel.h"
#include "lemma/kernels/x86/amx/tile_emulator.h"

namespace lemma::kernels::x86 {

void flash_split_amx_bf16_emulated(const FlashSplitArgs& args) { amx::flash_split_bf16<amx::TileEmulator>(args); }

}  // namespace lemma::kernels::x86
