// The same kernels on the tile emulator: compiled without ISA flags, so they run on any x86-64 CPU
// and test the AMX kernels' logic where no AMX exists.
#include "lemma/kernels/x86/amx/amx_int8.h"
#include "lemma/kernels/x86/amx/interleaved_amx_kernel.h"
#include "lemma/kernels/x86/amx/lanes_scalar.h"
#include "lemma/kernels/x86/amx/tile_emulator.h"

namespace lemma::kernels::x86 {

#define LEMMA_DEFINE_AMX_KERNEL(name, codes) \
  void matmul_##name##_int8_amx_emulated(const MatmulArgs& args) { amx::matmul_interleaved<amx::TileEmulator, amx::ScalarLanes, amx::codes>(args); }
LEMMA_AMX_INT8_CODES(LEMMA_DEFINE_AMX_KERNEL)
#undef LEMMA_DEFINE_AMX_KERNEL

}  // namespace lemma::kernels::x86
