#include <cstring>

#include "lemma/bench/x86/probes.h"

namespace lemma::bench::x86 {

uint64_t read_sum_scalar(const void* data, size_t bytes) {
  const auto* p = static_cast<const uint64_t*>(data);
  uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
  for (size_t i = 0; i < bytes / sizeof(uint64_t); i += 4) {
    s0 += p[i];
    s1 += p[i + 1];
    s2 += p[i + 2];
    s3 += p[i + 3];
  }
  return s0 + s1 + s2 + s3;
}

}  // namespace lemma::bench::x86
