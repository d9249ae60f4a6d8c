// Which CPU-specific kernel paths a kernels_tests run exercised (issue 33): tests of AMX and
// AVX512_BF16 hardware skip where the CPU lacks it, while their twins run everywhere (the AMX kernel
// templates on the tile emulator, tile_emulator.h; the bf16x16 kernel's AVX2 build, same bits). The
// binary prints hardware_paths_line() once per run, and a skip says what ran instead.
#pragma once

#include <string>

namespace lemma::kernels::testing {

// "hardware paths: avx2 yes, avx512 yes, avx512_vnni yes, avx512_bf16 yes, amx no (...)": each
// path the CPU lacks says what stood in for it.
std::string hardware_paths_line();

// The GTEST_SKIP() message of a test that needs `feature` ("AMX", "AVX512_BF16"), which this CPU
// lacks: "no AMX on this CPU: <instead>".
std::string without(const char* feature, const char* instead);

}  // namespace lemma::kernels::testing
