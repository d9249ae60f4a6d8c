// The same kernels on the tile emulator: compiled without ISA flags, so they run on any x86-64 CPU
// and test the AMX kernels' logic where no AMX exists.
#include "lemma/kernels/x86/amx/amx_int8.h"
#include "lemma/kernels/x86/amx/interleaved_amx_kernel.h"
#include "lemma/kernels/x86/amx/lanes_scalar.h"
#include "lemma/kernels/x86/amx/tile_emulator.h"

namespace lemma::kernels::x86 {

void matmul_q8_0x16_int8_amx_emulated(const MatmulArgs& args) { amx::matmul_interleaved<amx::TileEmulator, amx::ScalarLanes, amx::Q8Codes>(args); }
void matmul_q4_0x16_int8_amx_emulated(const MatmulArgs& args) { amx::matmul_interleaved<amx::TileEmulator, amx::ScalarLanes, amx::Q4Codes>(args); }
void matmul_q5_0x16_int8_amx_emulated(const MatmulArgs& args) { amx::matmul_interleaved<amx::TileEmulator, amx::ScalarLanes, amx::Q5Codes>(args); }
void matmul_q4_1x16_int8_amx_emulated(const MatmulArgs& args) { amx::matmul_interleaved<amx::TileEmulator, amx::ScalarLanes, amx::Q41Codes>(args); }
void matmul_q5_1x16_int8_amx_emulated(const MatmulArgs& args) { amx::matmul_interleaved<amx::TileEmulator, amx::ScalarLanes, amx::Q51Codes>(args); }
void matmul_iq4_nlx16_int8_amx_emulated(const MatmulArgs& args) { amx::matmul_interleaved<amx::TileEmulator, amx::ScalarLanes, amx::Iq4NLCodes>(args); }
void matmul_iq4_xsx16_int8_amx_emulated(const MatmulArgs& args) { amx::matmul_interleaved<amx::TileEmulator, amx::ScalarLanes, amx::Iq4XSCodes>(args); }

}  // namespace lemma::kernels::x86
