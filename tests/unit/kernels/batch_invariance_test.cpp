// Batch invariance: a row of y must be bitwise identical whether it is computed alone (decode,
// M=1), inside a large batch (prefill), next to different neighbours, or with W split over N.
#include <algorithm>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "lemma/kernels/matmul.h"
#include "matmul_test_util.h"

namespace lemma::kernels {
namespace {

using testing::random_floats;
using testing::random_weights;

struct Variant {
  DType type;
  MatmulPrecision precision;
};

std::vector<Variant> variants() {
  std::vector<Variant> v = {{DType::kF32, MatmulPrecision::kF32Activations},
                            {DType::kF16, MatmulPrecision::kF32Activations},
                            {DType::kBF16, MatmulPrecision::kF32Activations},
                            {DType::kQ8_0, MatmulPrecision::kF32Activations},
                            {DType::kQ4_K, MatmulPrecision::kF32Activations}};
  if (cpu_features().avx512_bf16) v.push_back({DType::kBF16, MatmulPrecision::kBf16Activations});
  return v;
}

bool same_bits(const float* a, const float* b, int64_t n) {
  return std::memcmp(a, b, static_cast<size_t>(n) * sizeof(float)) == 0;
}

TEST(BatchInvariance, RowsDoNotDependOnMOrNeighbours) {
  uint32_t seed = 9;
  for (Isa isa : available_isas()) {
    for (const Variant& v : variants()) {
      for (int64_t K : {256, 1024}) {  // multiples of every block size, long enough for many steps
        SCOPED_TRACE(std::string(isa_name(isa)) + " " + std::string(dtype_name(v.type)) + " K=" + std::to_string(K) +
                     (v.precision == MatmulPrecision::kBf16Activations ? " bf16-activations" : ""));
        std::mt19937 rng(seed++);
        const int64_t M = 37, N = 45;
        const MatmulOptions options{isa, v.precision};
        const auto x = random_floats(static_cast<size_t>(M * K), rng);
        const auto w = random_weights(v.type, N, K, rng);
        std::vector<float> batch(static_cast<size_t>(M * N));
        matmul(x.data(), K, M, w.view, batch.data(), N, nullptr, options);

        // Each row alone (decode) and each prefix (every M from 1 to 37 ends at a different tile).
        std::vector<float> one(static_cast<size_t>(N));
        for (int64_t m = 0; m < M; ++m) {
          matmul(x.data() + m * K, K, 1, w.view, one.data(), N, nullptr, options);
          EXPECT_TRUE(same_bits(one.data(), batch.data() + m * N, N)) << "row " << m << " alone";
        }
        for (int64_t prefix : {2, 3, 5, 8, 17}) {
          std::vector<float> part(static_cast<size_t>(prefix * N));
          matmul(x.data(), K, prefix, w.view, part.data(), N, nullptr, options);
          EXPECT_TRUE(same_bits(part.data(), batch.data(), prefix * N)) << "prefix " << prefix;
        }
        // Same row 5 among different neighbours, at a different position in the batch.
        auto other = random_floats(static_cast<size_t>(6 * K), rng);
        std::memcpy(other.data() + 2 * K, x.data() + 5 * K, static_cast<size_t>(K) * 4);
        std::vector<float> mixed(static_cast<size_t>(6 * N));
        matmul(other.data(), K, 6, w.view, mixed.data(), N, nullptr, options);
        EXPECT_TRUE(same_bits(mixed.data() + 2 * N, batch.data() + 5 * N, N)) << "row 5 among other rows";
        // W split over N (how callers parallelise): rows [13, 40) of W.
        const auto row_bytes = static_cast<int64_t>(*dtype_bytes(v.type, static_cast<uint64_t>(K)));
        const TensorView slice{w.view.bytes_ptr() + 13 * row_bytes, v.type, Shape{27, K}};
        std::vector<float> split(static_cast<size_t>(M * 27));
        matmul(x.data(), K, M, slice, split.data(), 27, nullptr, options);
        for (int64_t m = 0; m < M; ++m) {
          EXPECT_TRUE(same_bits(split.data() + m * 27, batch.data() + m * N + 13, 27)) << "split row " << m;
        }
      }
    }
  }
}

// plan_matmul() + run_rows() over any split of [0, N) (how a thread team's tiles run a matmul)
// gives the bits of one matmul() call, for every ISA and weight type, including the prefetching
// first pass (small M) and splits that cut the kernels' 4-row register tiles.
TEST(BatchInvariance, PlannedRowRangesEqualOneCall) {
  uint32_t seed = 101;
  for (Isa isa : available_isas()) {
    for (DType type : {DType::kF32, DType::kF16, DType::kBF16, DType::kQ8_0, DType::kQ4_0}) {
      for (int64_t M : {1, 2, 5}) {
        SCOPED_TRACE(std::string(isa_name(isa)) + " " + std::string(dtype_name(type)) + " M=" + std::to_string(M));
        std::mt19937 rng(seed++);
        const int64_t N = 77, K = 320;
        const auto x = random_floats(static_cast<size_t>(M * K), rng);
        const auto w = random_weights(type, N, K, rng);
        const auto bias = random_floats(static_cast<size_t>(N), rng);
        std::vector<float> whole(static_cast<size_t>(M * N));
        matmul(x.data(), K, M, w.view, whole.data(), N, bias.data(), {isa});
        const MatmulPlan plan = plan_matmul(x.data(), K, M, w.view, whole.data(), N,
                                            bias.data(), {isa});
        EXPECT_EQ(plan.args.N, N);
        for (int64_t tile : {1, 3, 16, 50}) {
          std::vector<float> split(static_cast<size_t>(M * N), -1.0f);
          MatmulPlan p = plan;
          p.args.y = split.data();
          prepare_activations(std::span(&p, 1), test_activations());  // int8-activation kernels (Q8_0, Q4_0) read x quantised
          for (int64_t n0 = N; n0 > 0; n0 -= tile) p.run_rows(std::max<int64_t>(0, n0 - tile), n0);  // last tile first
          EXPECT_TRUE(same_bits(split.data(), whole.data(), M * N)) << "tiles of " << tile;
        }
      }
    }
  }
}

}  // namespace
}  // namespace lemma::kernels
