// The interleaved int8 kernels on the AMX tiles (compiled with -mamx-tile -mamx-int8 -mamx-bf16 and
// the AVX-512 flags; run only where cpu_features().amx).
#include "lemma/kernels/x86/amx/amx_int8.h"
#include "lemma/kernels/x86/amx/interleaved_amx_kernel.h"
#include "lemma/kernels/x86/amx/lanes_avx512.h"
#include "lemma/kernels/x86/amx/tiles_hardware.h"

namespace lemma::kernels::x86 {

void matmul_q8_0x16_int8_amx(const MatmulArgs& args) { amx::matmul_interleaved<amx::HardwareTiles, amx::Avx512Lanes, amx::Q8Codes>(args); }
void matmul_q4_0x16_int8_amx(const MatmulArgs& args) { amx::matmul_interleaved<amx::HardwareTiles, amx::Avx512Lanes, amx::Q4Codes>(args); }
void matmul_q5_0x16_int8_amx(const MatmulArgs& args) { amx::matmul_interleaved<amx::HardwareTiles, amx::Avx512Lanes, amx::Q5Codes>(args); }
void matmul_q4_1x16_int8_amx(const MatmulArgs& args) { amx::matmul_interleaved<amx::HardwareTiles, amx::Avx512Lanes, amx::Q41Codes>(args); }
void matmul_q5_1x16_int8_amx(const MatmulArgs& args) { amx::matmul_interleaved<amx::HardwareTiles, amx::Avx512Lanes, amx::Q51Codes>(args); }
void matmul_iq4_nlx16_int8_amx(const MatmulArgs& args) { amx::matmul_interleaved<amx::HardwareTiles, amx::Avx512Lanes, amx::Iq4NLCodes>(args); }
void matmul_iq4_xsx16_int8_amx(const MatmulArgs& args) { amx::matmul_interleaved<amx::HardwareTiles, amx::Avx512Lanes, amx::Iq4XSCodes>(args); }

}  // namespace lemma::kernels::x86
