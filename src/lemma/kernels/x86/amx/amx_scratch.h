// The most KernelScratch bytes an AMX kernel asks for (the AMX-INT8 panel, the flash split's tiles),
// so that a caller can grow each worker's scratch before the first call (KernelSet::scratch_bytes):
// steady-state forwards then allocate nothing, whichever worker first runs an AMX tile. Each kernel
// static_asserts that its working set fits. A constant, not code: ISA files include it.
#pragma once

#include <cstddef>

namespace lemma::kernels::x86::amx {

constexpr size_t kAmxScratchBytes = 330 * 1024;

}  // namespace lemma::kernels::x86::amx
