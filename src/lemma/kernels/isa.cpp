#include "lemma/kernels/isa.h"

#include <cpuid.h>
#include <cstdint>
#include <string>

#if defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
#endif

#include "lemma/base/error.h"

namespace lemma::kernels {

namespace {

constexpr std::string_view kNames[] = {"scalar", "avx2", "avx512", "amx"};

bool bit(uint32_t value, int index) { return (value >> index) & 1u; }

// XCR0: which register states the OS saves on context switch.
uint64_t read_xcr0() {
  uint32_t eax = 0, edx = 0;
  __asm__ volatile("xgetbv" : "=a"(eax), "=d"(edx) : "c"(0));
  return (static_cast<uint64_t>(edx) << 32) | eax;
}

// Linux only hands out AMX tile state to processes that ask for it.
bool request_amx_permission() {
#if defined(__linux__)
  constexpr long kArchReqXcompPerm = 0x1023;
  constexpr long kXfeatureXtiledata = 18;
  return syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
#else
  return false;
#endif
}

CpuFeatures detect() {
  CpuFeatures f;
  uint32_t eax, ebx, ecx, edx;
  if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx)) return f;
  const bool osxsave = bit(ecx, 27), avx = bit(ecx, 28), fma = bit(ecx, 12), f16c = bit(ecx, 29);
  if (!osxsave || !avx) return f;
  const uint64_t xcr0 = read_xcr0();
  const bool os_ymm = (xcr0 & 0x6) == 0x6;            // SSE + AVX state
  const bool os_zmm = (xcr0 & 0xE6) == 0xE6;          // + opmask, ZMM_Hi256, Hi16_ZMM
  const bool os_tiles = (xcr0 & 0x60000) == 0x60000;  // XTILECFG + XTILEDATA
  if (__get_cpuid_max(0, nullptr) < 7) return f;
  __cpuid_count(7, 0, eax, ebx, ecx, edx);
  const uint32_t ebx7 = ebx, ecx7 = ecx, edx7 = edx;
  __cpuid_count(7, 1, eax, ebx, ecx, edx);
  const uint32_t eax7_1 = eax;

  f.avx2 = os_ymm && bit(ebx7, 5) && fma && f16c;
  f.avx512 = f.avx2 && os_zmm && bit(ebx7, 16) && bit(ebx7, 17) && bit(ebx7, 30) && bit(ebx7, 31);
  f.avx512_vnni = f.avx512 && bit(ecx7, 11);
  f.avx512_bf16 = f.avx512 && bit(eax7_1, 5);
  const bool amx_cpu = bit(edx7, 24) && bit(edx7, 25) && bit(edx7, 22);
  f.amx = f.avx512 && amx_cpu && os_tiles && request_amx_permission();
  return f;
}

Isa highest(const CpuFeatures& f) {
  if (f.amx) return Isa::kAmx;
  if (f.avx512) return Isa::kAvx512;
  if (f.avx2) return Isa::kAvx2;
  return Isa::kScalar;
}

}  // namespace

std::string_view isa_name(Isa isa) { return kNames[static_cast<int>(isa)]; }

std::optional<Isa> parse_isa(std::string_view name) {
  for (int i = 0; i < 4; ++i) {
    if (kNames[i] == name) return static_cast<Isa>(i);
  }
  return std::nullopt;
}

const CpuFeatures& cpu_features() {
  static const CpuFeatures features = detect();
  return features;
}

Isa detected_isa() { return highest(cpu_features()); }

std::vector<Isa> available_isas() {
  std::vector<Isa> out;
  for (int i = 0; i <= static_cast<int>(detected_isa()); ++i) out.push_back(static_cast<Isa>(i));
  return out;
}

Isa checked_isa(Isa wanted) {
  if (wanted > detected_isa()) {
    fail<Unsupported>("ISA {} was asked for but this machine supports at most {}", isa_name(wanted), isa_name(detected_isa()));
  }
  return wanted;
}

}  // namespace lemma::kernels
