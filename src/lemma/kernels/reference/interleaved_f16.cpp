#include "lemma/kernels/reference/interleaved_f16.h"

#include <cmath>

#include "lemma/kernels/float_bits.h"
#include "lemma/kernels/interleaved_blocks.h"

namespace lemma::kernels {

void matmul_f16x16_reference(const MatmulArgs& a) {
  const auto* w = static_cast<const uint16_t*>(a.w);
  for (int64_t m = 0; m < a.M; ++m) {
    const float* x = a.x + m * a.x_stride;
    for (int64_t n = 0; n < a.N; ++n) {
      const uint16_t* group = w + n / kInterleaveRows * kInterleaveRows * a.K;
      const int64_t i = n % kInterleaveRows;
      float acc = 0.0f;
      for (int64_t k = 0; k < a.K; ++k) acc = std::fma(f16_to_f32(group[k * kInterleaveRows + i]), x[k], acc);
      a.y[m * a.y_stride + n] = a.bias != nullptr ? acc + a.bias[n] : acc;
    }
  }
}

}  // namespace lemma::kernels
