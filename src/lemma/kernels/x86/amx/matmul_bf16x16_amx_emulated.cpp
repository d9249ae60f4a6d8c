// The same kernel on the tile emulator: compiled without ISA flags, so it runs on any x86-64 CPU and
// tests the AMX-BF16 kernel's logic where no AMX exists.
#include "lemma/kernels/x86/amx/amx_bf16.h"
#include "lemma/kernels/x86/amx/bf16x16_amx_kernel.h"
#include "lemma/kernels/x86/amx/tile_emulator.h"

namespace lemma::kernels::x86 {

void matmul_bf16x16_amx_emulated(const MatmulArgs& args) { amx::matmul_bf16x16<amx::TileEmulator>(args); }

}  // namespace lemma::kernels::x86
