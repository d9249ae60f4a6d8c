// Shared helpers for the matmul tests: random weights in any dtype and a float64 oracle.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "lemma/kernels/dequantize.h"
#include "lemma/kernels/float_bits.h"
#include "lemma/kernels/matmul.h"
#include "lemma/tensor/tensor_view.h"

namespace lemma::kernels {
// The prepared-x buffer tests pass to prepare_activations (a forward keeps one in its workspace).
inline ActivationBuffer& test_activations() {
  thread_local ActivationBuffer buffer;
  return buffer;
}
}  // namespace lemma::kernels

namespace lemma::kernels::testing {

struct Weights {
  std::vector<uint8_t> bytes;
  TensorView view;
  std::vector<float> dequantized;  // [N, K], what the kernels must multiply by
};

inline std::vector<float> random_floats(size_t n, std::mt19937& rng, float scale = 1.0f) {
  std::uniform_real_distribution<float> dist(-scale, scale);  // only the test's data, not checked values
  std::vector<float> v(n);
  for (auto& x : v) x = dist(rng);
  return v;
}

// Random weights: floats are rounded from uniform values; quantized blocks get random code bytes
// and sane f16 scales (every 2-byte scale field is overwritten with a small value).
inline Weights random_weights(DType type, int64_t N, int64_t K, std::mt19937& rng) {
  Weights w;
  const auto count = static_cast<size_t>(N * K);
  const auto bytes = static_cast<size_t>(*dtype_bytes(type, static_cast<uint64_t>(N * K)));
  w.bytes.resize(bytes + 64);
  const std::vector<float> values = random_floats(count, rng);
  if (type == DType::kF32) {
    std::memcpy(w.bytes.data(), values.data(), count * 4);
  } else if (type == DType::kF16 || type == DType::kBF16) {
    auto* h = reinterpret_cast<uint16_t*>(w.bytes.data());
    for (size_t i = 0; i < count; ++i) h[i] = type == DType::kF16 ? f32_to_f16(values[i]) : f32_to_bf16(values[i]);
  } else {
    for (auto& b : w.bytes) b = static_cast<uint8_t>(rng());
    const DTypeInfo& info = dtype_info(type);
    const size_t blocks = bytes / info.block_bytes;
    for (size_t b = 0; b < blocks; ++b) {
      uint8_t* block = w.bytes.data() + b * info.block_bytes;
      // Scale fields: at the start, except Q6_K/Q3_K (d last) and Q2_K (d, dmin last).
      const uint16_t scale = f32_to_f16(0.01f + 0.001f * static_cast<float>(b % 7));
      const uint16_t scale2 = f32_to_f16(0.02f);
      if (type == DType::kQ6_K || type == DType::kQ3_K) {
        std::memcpy(block + info.block_bytes - 2, &scale, 2);
      } else if (type == DType::kQ2_K) {
        std::memcpy(block + info.block_bytes - 4, &scale, 2);
        std::memcpy(block + info.block_bytes - 2, &scale2, 2);
      } else {
        std::memcpy(block, &scale, 2);
        if (type == DType::kQ4_1 || type == DType::kQ5_1 || type == DType::kQ4_K || type == DType::kQ5_K) {
          std::memcpy(block + 2, &scale2, 2);
        }
      }
    }
  }
  w.view = TensorView{w.bytes.data(), type, Shape{N, K}};
  w.dequantized.resize(count);
  const auto row_bytes = bytes / static_cast<size_t>(N == 0 ? 1 : N);
  for (int64_t n = 0; n < N; ++n) {
    dequantize_row(type, w.bytes.data() + static_cast<size_t>(n) * row_bytes,
                   w.dequantized.data() + n * K, K);
  }
  return w;
}

// Q8_0/Q4_0/Q5_0 blocks at the format's limits: every other one of `bytes`' blocks gets the f16
// scale 60000 and every byte after it 0x80 or 0x7F (Q8_0: codes -128 / 127), by turns.
inline void make_extreme_blocks(DType type, std::vector<uint8_t>& bytes, int64_t blocks) {
  const DTypeInfo& info = dtype_info(type);
  for (int64_t b = 0; b < blocks; b += 2) {
    uint8_t* block = bytes.data() + b * static_cast<int64_t>(info.block_bytes);
    const uint16_t big = f32_to_f16(60000.0f);
    std::memcpy(block, &big, 2);
    std::memset(block + 2, b % 4 == 0 ? 0x80 : 0x7F, info.block_bytes - 2);
    if (type == DType::kQ4_1 || type == DType::kQ5_1) {  // their min m follows d: an extreme, not NaN
      const uint16_t min = f32_to_f16(b % 4 == 0 ? -60000.0f : 60000.0f);
      std::memcpy(block + 2, &min, 2);
    }
  }
}

// y_ref[m, n] in double and the bound sum_k |x w| the f32 error is measured against.
struct Oracle {
  std::vector<double> y;
  std::vector<double> magnitude;
};

inline Oracle oracle(const std::vector<float>& x, int64_t x_stride, int64_t M, const std::vector<float>& w,
                     int64_t N, int64_t K, const float* bias) {
  Oracle o;
  o.y.resize(static_cast<size_t>(M * N));
  o.magnitude.resize(static_cast<size_t>(M * N));
  for (int64_t m = 0; m < M; ++m) {
    for (int64_t n = 0; n < N; ++n) {
      double sum = bias ? bias[n] : 0.0, mag = bias ? std::fabs(bias[n]) : 0.0;
      for (int64_t k = 0; k < K; ++k) {
        const double p = static_cast<double>(x[static_cast<size_t>(m * x_stride + k)]) * w[static_cast<size_t>(n * K + k)];
        sum += p;
        mag += std::fabs(p);
      }
      o.y[static_cast<size_t>(m * N + n)] = sum;
      o.magnitude[static_cast<size_t>(m * N + n)] = mag;
    }
  }
  return o;
}

// A proven bound for f32 sums of K+1 terms in any order: (K + 2) * 2^-24 * sum |terms| (+ slack).
inline double tolerance(double magnitude, int64_t K) {
  return static_cast<double>(K + 2) * 0x1p-24 * magnitude * 1.01 + 1e-30;
}

// y = x . W^T (+ bias) through matmul() with these options; y starts at -1 so unwritten outputs show.
inline std::vector<float> run_matmul(const std::vector<float>& x, int64_t x_stride, int64_t M, const TensorView& w,
                                     const float* bias, const MatmulOptions& options) {
  std::vector<float> y(static_cast<size_t>(M * w.shape[0]), -1.0f);
  matmul(x.data(), x_stride, M, w, y.data(), w.shape[0], bias, options);
  return y;
}

// Bit-equal, except that any NaN equals any NaN (which NaN an add returns depends on operand order,
// which the compiler may swap in scalar code).
inline bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::isnan(a[i]) && std::isnan(b[i])) continue;
    if (std::memcmp(&a[i], &b[i], sizeof(float)) != 0) return false;
  }
  return true;
}

// Batch invariance of any kernel: `run(rows, count)` multiplies the first `count` rows of `rows`
// (K apart) and returns y [count, N]. "" when `batch` (the M-row result) holds bitwise what each row
// of x computed alone and what each prefix of `prefixes` rows computed; otherwise which one differed.
template <class Run>
inline std::string first_batch_dependence_of(Run&& run, const std::vector<float>& x, int64_t K, int64_t M, int64_t N,
                                             const std::vector<float>& batch, std::initializer_list<int64_t> prefixes) {
  for (int64_t m = 0; m < M; ++m) {
    const std::vector<float> row(x.begin() + m * K, x.begin() + (m + 1) * K);
    const std::vector<float> one = run(row, int64_t{1});
    if (std::memcmp(one.data(), batch.data() + m * N, static_cast<size_t>(N) * sizeof(float)) != 0)
      return "row " + std::to_string(m) + " alone";
  }
  for (int64_t prefix : prefixes) {
    const std::vector<float> part = run(x, prefix);
    if (std::memcmp(part.data(), batch.data(), part.size() * sizeof(float)) != 0) return "M=" + std::to_string(prefix);
  }
  return "";
}

// The same through matmul() over x [M, K] (rows K apart) with these options.
inline std::string first_batch_dependence(const std::vector<float>& x, int64_t K, int64_t M, const TensorView& w,
                                          const MatmulOptions& options, const std::vector<float>& batch,
                                          std::initializer_list<int64_t> prefixes) {
  const auto run = [&](const std::vector<float>& rows, int64_t count) { return run_matmul(rows, K, count, w, nullptr, options); };
  return first_batch_dependence_of(run, x, K, M, w.shape[0], batch, prefixes);
}

// y for x [M, K] (rows K apart) through plan_matmul() + run_rows() over N (> 32) cut into
// [32, N), [16, 32), [0, 16): whole 16-row groups of interleaved weights, the last (partial) one
// first. The plan stays with its y for further checks (e.g. that a split inside a group throws).
struct GroupSplitRun {
  std::vector<float> y;
  MatmulPlan plan;
};
inline GroupSplitRun run_in_group_splits(const std::vector<float>& x, int64_t K, int64_t M, const TensorView& w,
                                         const MatmulOptions& options) {
  const int64_t N = w.shape[0];
  GroupSplitRun r{std::vector<float>(static_cast<size_t>(M * N), -1.0f), {}};
  r.plan = plan_matmul(x.data(), K, M, w, r.y.data(), N, nullptr, options);
  prepare_activations(std::span(&r.plan, 1), test_activations());
  r.plan.run_rows(32, N);
  r.plan.run_rows(16, 32);
  r.plan.run_rows(0, 16);
  return r;
}

}  // namespace lemma::kernels::testing
