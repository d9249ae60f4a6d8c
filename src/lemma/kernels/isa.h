// The instruction sets lemma's kernels can target, detected once per process (cpuid + xgetbv, and
// on Linux the AMX tile-state permission). Which ISA runs is the caller's choice (RuntimeOptions::isa,
// from `--isa` or LEMMA_ISA in the CLI); APIs that take no ISA use detected_isa().
// Thread-safe: detection runs once (function-local static); everything after is read-only.
#pragma once

#include <optional>
#include <string_view>
#include <vector>

namespace lemma::kernels {

// Ordered: a kernel written for a lower ISA runs on every higher one.
enum class Isa : int { kScalar = 0, kAvx2 = 1, kAvx512 = 2, kAmx = 3 };

// What the CPU and OS support, finer-grained than Isa (some kernels need an extra feature).
struct CpuFeatures {
  bool avx2 = false;         // AVX2 + FMA + F16C, OS saves YMM state
  bool avx512 = false;       // AVX-512 F/BW/VL/DQ, OS saves ZMM + opmask state
  bool avx512_bf16 = false;  // AVX512_BF16 (vdpbf16ps, vcvtne2ps2bf16)
  bool avx512_vnni = false;
  bool amx = false;          // AMX-TILE/INT8/BF16, OS tile state granted (arch_prctl)
};

std::string_view isa_name(Isa isa);  // "scalar", "avx2", "avx512", "amx"
// Parses a name as isa_name() prints it (case-sensitive); nullopt otherwise.
std::optional<Isa> parse_isa(std::string_view name);

// The machine's features (detected once).
const CpuFeatures& cpu_features();
// The highest ISA this machine can run.
Isa detected_isa();
// Every ISA this machine can run, lowest first: {kScalar, ..., detected_isa()}. Tests loop over it.
std::vector<Isa> available_isas();

// `wanted`, or Unsupported naming both when this machine cannot run it (a silent fallback would
// make "forced" comparisons meaningless).
Isa checked_isa(Isa wanted);

}  // namespace lemma::kernels
