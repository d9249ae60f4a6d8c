// interleave_matmul_weights folds a GPTQ act-order down projection's input order into gate and up:
// their interleaved copies hold rows in down's order (each row read back equals the source row it
// names), down's order is cleared, the other matrices keep theirs; where interleaving is off
// (RuntimeOptions::interleave off) nothing moves and down keeps its order for the gather at run time.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <random>
#include <vector>

#include "lemma/kernels/dequantize.h"
#include "lemma/kernels/float_bits.h"
#include "lemma/kernels/interleaved_blocks.h"
#include "lemma/model/interleaved_weights.h"

namespace lemma {
namespace {

// Random Q8_0 bytes for an [N, K] matrix (f16 scale + 32 codes per block).
std::vector<uint8_t> random_q8_0(int64_t N, int64_t K, std::mt19937& rng) {
  std::vector<uint8_t> bytes(static_cast<size_t>(N * K / 32 * 34));
  std::uniform_int_distribution<int> code(-127, 127);
  for (size_t b = 0; b < bytes.size() / 34; ++b) {
    const uint16_t d = kernels::f32_to_f16(0.01f * static_cast<float>(1 + b % 5));
    std::memcpy(bytes.data() + 34 * b, &d, 2);
    for (size_t i = 0; i < 32; ++i) bytes[34 * b + 2 + i] = static_cast<uint8_t>(static_cast<int8_t>(code(rng)));
  }
  return bytes;
}

std::vector<float> row_of(const TensorView& w, int64_t row) {
  const int64_t K = w.shape[1];
  std::vector<float> out(static_cast<size_t>(K));
  if (w.layout == RowLayout::kInterleaved16) {
    kernels::read_interleaved_row(w.dtype, w.data, K, row, out.data());
  } else {
    kernels::dequantize_row(w.dtype, static_cast<const uint8_t*>(w.data) + row * (K / 32 * 34), out.data(), K);
  }
  return out;
}

TEST(InterleavedWeights, DownOrderIsFoldedIntoGateAndUpRows) {
  std::mt19937 rng(3);
  const int64_t H = 64, I = 96;  // I: gate/up rows = down's inputs (six 16-row groups)
  std::vector<int32_t> order(static_cast<size_t>(I)), q_order(static_cast<size_t>(H));
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), rng);
  std::iota(q_order.begin(), q_order.end(), 0);
  std::shuffle(q_order.begin(), q_order.end(), rng);
  const auto gate_bytes = random_q8_0(I, H, rng), up_bytes = random_q8_0(I, H, rng), down_bytes = random_q8_0(H, I, rng);
  const auto q_bytes = random_q8_0(H, H, rng);
  for (const bool enabled : {true, false}) {
    SCOPED_TRACE(enabled ? "interleaving on" : "interleaving off");
    const RuntimeOptions runtime{.interleave = enabled};
    ModelWeights weights;
    LayerWeights& layer = weights.layers.emplace_back();
    layer.gate = TensorView{gate_bytes.data(), DType::kQ8_0, Shape{I, H}};
    layer.up = TensorView{up_bytes.data(), DType::kQ8_0, Shape{I, H}};
    layer.down = TensorView{down_bytes.data(), DType::kQ8_0, Shape{H, I}};
    layer.q = layer.k = layer.v = layer.o = TensorView{q_bytes.data(), DType::kQ8_0, Shape{H, H}};
    layer.down_order = order;
    layer.q_order = q_order;
    const TensorView gate = layer.gate, up = layer.up;
    const auto owner = interleave_matmul_weights(weights, runtime);
    const bool interleaved = enabled && interleaving_enabled(DType::kQ8_0, runtime);
    EXPECT_EQ(layer.down_order.empty(), interleaved);
    EXPECT_EQ(layer.q_order, q_order);  // input orders of other matrices are the matmul's to apply
    for (int64_t n = 0; n < I; ++n) {
      const int64_t source = interleaved ? order[static_cast<size_t>(n)] : n;
      ASSERT_EQ(row_of(layer.gate, n), row_of(gate, source)) << "gate row " << n;
      ASSERT_EQ(row_of(layer.up, n), row_of(up, source)) << "up row " << n;
    }
  }
}

}  // namespace
}  // namespace lemma
