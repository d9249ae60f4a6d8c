// kernel_digest: one 64-bit digest per kernel and ISA over fixed pseudo-random inputs (row ops,
// vocabulary passes, conversions, block decoders, every registered matmul kernel with its activation
// quantiser, every flash split kernel), printed one per line. Two builds that print the same lines
// compute the same bits: run it before and after a change to the kernels and diff the outputs.
// Usage: kernel_digest [> digests.txt]
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "lemma/kernels/attention/flash_attention.h"
#include "lemma/kernels/convert.h"
#include "lemma/kernels/dequantize.h"
#include "lemma/kernels/float_bits.h"
#include "lemma/kernels/interleaved_blocks.h"
#include "lemma/kernels/ops.h"
#include "lemma/kernels/registry.h"
#include "lemma/kernels/vocab_ops.h"

namespace {

using lemma::DType;
using namespace lemma::kernels;

// FNV-1a over bytes.
uint64_t digest(const void* data, size_t bytes, uint64_t h = 1469598103934665603ull) {
  const auto* p = static_cast<const uint8_t*>(data);
  for (size_t i = 0; i < bytes; ++i) h = (h ^ p[i]) * 1099511628211ull;
  return h;
}
template <class T>
uint64_t digest(const std::vector<T>& v, uint64_t h = 1469598103934665603ull) {
  return digest(v.data(), v.size() * sizeof(T), h);
}

void print(const std::string& what, Isa isa, uint64_t h) {
  std::printf("%-40s %-7s %016llx\n", what.c_str(), std::string(isa_name(isa)).c_str(), static_cast<unsigned long long>(h));
}

std::vector<float> floats(size_t n, uint32_t seed, float scale = 1.0f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-scale, scale);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(rng);
  return v;
}

void row_ops(Isa isa) {
  for (int64_t n : {1, 7, 8, 15, 16, 17, 33, 100, 1000, 4099}) {
    const std::string s = "/" + std::to_string(n);
    const auto x = floats(n, 1 + n, 4.0f), d = floats(n, 2 + n), w = floats(n, 3 + n);
    std::vector<float> y(n), r = x;
    rmsnorm(x, w, 1e-6f, y, isa);
    print("rmsnorm" + s, isa, digest(y));
    add_rmsnorm(r, d, w, 1e-6f, y, isa);
    print("add_rmsnorm" + s, isa, digest(y, digest(r)));
    silu_mul(x, d, y, isa);
    print("silu_mul" + s, isa, digest(y));
    softmax(x, y, isa);
    print("softmax" + s, isa, digest(y));
    add(x, d, y, isa);
    print("add" + s, isa, digest(y));
    const auto big = floats(n, 4 + n, 100.0f);
    exp_row(big, y, isa);
    print("exp" + s, isa, digest(y));
  }
}

void vocab(Isa isa) {
  for (int64_t n : {1, 9, 16, 31, 1000, 2051, 5000}) {
    const std::string s = "/" + std::to_string(n);
    auto x = floats(n, 10 + n, 8.0f);
    if (n > 5) x[n / 2] = __builtin_nanf(""), x[3] = -__builtin_inff();
    std::vector<float> y(n);
    const int64_t nans = copy_masking_nan(x, y, isa);
    print("copy_masking_nan" + s, isa, digest(y, static_cast<uint64_t>(nans)));
    const float max = max_ignoring_nan(y, isa);
    print("max_ignoring_nan" + s, isa, digest(&max, 4));
    const int64_t arg = argmax_first(y, isa);
    print("argmax_first" + s, isa, digest(&arg, 8));
    divide_row(y, 3.7f, y, isa);
    print("divide_row" + s, isa, digest(y));
    std::vector<float> w(n);
    std::vector<double> sums(exp_sum_blocks(n));
    const double total = exp_block_sums(y, max / 3.7f, w, sums, isa);
    print("exp_block_sums" + s, isa, digest(sums, digest(w, digest(&total, 8))));
    uint64_t h = 0;
    for (float t : {-1.0f, 0.0f, 1.5f}) {
      const int64_t first = first_above(y, t, isa);
      std::vector<int32_t> ids(n);
      const int64_t count = select_at_least(y, t, ids, isa);
      ids.resize(count);
      h = digest(ids, digest(&first, 8, h));
    }
    print("first_above+select" + s, isa, h);
  }
}

void conversions(Isa isa) {
  for (int64_t n : {1, 7, 8, 17, 1000}) {
    const std::string s = "/" + std::to_string(n);
    auto x = floats(n, 20 + n, 70000.0f);
    x[0] = 1e-40f;
    if (n > 3) x[2] = __builtin_nanf("");
    std::vector<uint16_t> h(n);
    std::vector<float> back(n);
    convert_f32_to_f16(x.data(), h.data(), n, isa);
    convert_f16_to_f32(h.data(), back.data(), n, isa);
    print("convert_f16" + s, isa, digest(back, digest(h)));
    convert_f32_to_bf16(x.data(), h.data(), n, isa);
    convert_bf16_to_f32(h.data(), back.data(), n, isa);
    print("convert_bf16" + s, isa, digest(back, digest(h)));
  }
}

// Random blocks with small, finite f16 scales (every scale field overwritten).
std::vector<uint8_t> random_blocks(DType type, int64_t N, int64_t K, uint32_t seed) {
  const auto bytes = static_cast<size_t>(*lemma::dtype_bytes(type, static_cast<uint64_t>(N * K)));
  std::vector<uint8_t> w(bytes + 64);
  if (type == DType::kF32 || type == DType::kF16 || type == DType::kBF16) {
    const auto v = floats(static_cast<size_t>(N * K), seed, 0.5f);
    for (size_t i = 0; i < v.size(); ++i) {
      if (type == DType::kF32) {
        std::memcpy(w.data() + 4 * i, &v[i], 4);
      } else {
        const uint16_t h = type == DType::kF16 ? f32_to_f16(v[i]) : f32_to_bf16(v[i]);
        std::memcpy(w.data() + 2 * i, &h, 2);
      }
    }
    return w;
  }
  std::mt19937 rng(seed);
  for (auto& b : w) b = static_cast<uint8_t>(rng());
  const size_t block = lemma::dtype_info(type).block_bytes;
  for (size_t b = 0; b < bytes / block; ++b) {
    uint8_t* p = w.data() + b * block;
    const uint16_t d = f32_to_f16(0.01f + 0.001f * static_cast<float>(b % 7)), m = f32_to_f16(0.02f);
    const size_t at = type == DType::kQ6_K ? block - 2 : type == DType::kQ3_K ? block - 2 : type == DType::kQ2_K ? block - 4 : 0;
    std::memcpy(p + at, &d, 2);
    if (type == DType::kQ4_1 || type == DType::kQ5_1 || type == DType::kQ4_K || type == DType::kQ5_K || type == DType::kQ2_K)
      std::memcpy(p + at + 2, &m, 2);
  }
  if (type == DType::kW8A8) {  // one scale per row (read from its first block)
    const size_t row = bytes / static_cast<size_t>(N);
    for (int64_t n = 0; n < N; ++n)
      for (size_t b = 1; b < row / block; ++b) std::memcpy(w.data() + n * row + b * block, w.data() + n * row, 2);
  }
  return w;
}

void decoders(Isa isa) {
  for (DType t : {DType::kQ8_0, DType::kQ4_0, DType::kQ4_K, DType::kQ5_K, DType::kQ6_K, DType::kQ2_K, DType::kQ3_K,
                  DType::kQ4_1, DType::kQ5_0, DType::kQ5_1, DType::kIQ4_NL, DType::kIQ4_XS}) {
    const auto w = random_blocks(t, 1, 1024, 30 + static_cast<uint32_t>(t));
    std::vector<float> y(1024);
    dequantize_fn(t, isa)(w.data(), y.data(), 1024);
    print(std::string("decode_") + std::string(lemma::dtype_name(t)), isa, digest(y));
  }
}

void matmuls() {
  constexpr int64_t N = 37;
  for (const MatmulKernel& k : matmul_kernels()) {
    if (!runs_here(k)) continue;
    for (int64_t K : {int64_t{768}, int64_t{288}, int64_t{40}, int64_t{37}}) {
      const DType plain = k.weight.dtype;
      if (K % static_cast<int64_t>(lemma::dtype_info(plain).block_elements) != 0) continue;
      const bool kquant = k.weight == kernels::interleaved(DType::kQ2_K) || k.weight == kernels::interleaved(DType::kQ3_K) || k.weight == kernels::interleaved(DType::kQ4_K) ||
                          k.weight == kernels::interleaved(DType::kQ5_K) || k.weight == kernels::interleaved(DType::kQ6_K);
      if (k.weight.interleaved() && K % (kquant ? 256 : 32) != 0) continue;
      std::vector<uint8_t> w = random_blocks(plain, N, K, 40 + static_cast<uint32_t>(K));
      int64_t row_bytes = static_cast<int64_t>(*lemma::dtype_bytes(plain, static_cast<uint64_t>(K)));
      if (k.weight.interleaved()) {
        std::vector<uint8_t> out(interleaved_bytes(plain, N, K) + 64);
        interleave_rows(plain, w.data(), N, K, out.data());
        w = std::move(out);
        row_bytes = 0;
      }
      // 64-byte aligned, as Model's weights are (some kernels load W with aligned loads).
      std::unique_ptr<uint8_t[]> aligned(new (std::align_val_t{64}) uint8_t[w.size()]);
      std::memcpy(aligned.get(), w.data(), w.size());
      const auto bias = floats(N, 5);
      for (int64_t M : {1, 2, 3, 5, 7, 13, 33, 70}) {
        const auto x = floats(static_cast<size_t>(M * K), 50 + static_cast<uint32_t>(M));
        std::vector<float> y(static_cast<size_t>(M * N), -1.0f);
        MatmulArgs a;
        a.x = x.data();
        a.x_stride = K;
        a.w = aligned.get();
        a.w_row_bytes = row_bytes;
        a.bias = M % 2 ? bias.data() : nullptr;
        a.y = y.data();
        a.y_stride = N;
        a.M = M;
        a.N = N;
        a.K = K;
        std::unique_ptr<uint8_t[]> xq;
        if (k.quantize_x != nullptr) {
          const size_t bytes = k.xq_bytes(M, K);
          xq.reset(new (std::align_val_t{64}) uint8_t[bytes]);
          std::memset(xq.get(), 0xAB, bytes);
          k.quantize_x(x.data(), K, M, K, xq.get());
          a.xq = xq.get();
        }
        k.fn(a);
        const uint64_t hx = xq ? digest(xq.get(), k.xq_bytes(M, K)) : 0;
        print(std::string(k.name) + "/K" + std::to_string(K) + "/M" + std::to_string(M), k.isa, digest(y, hx));
      }
    }
  }
}

void flash() {
  constexpr int64_t kBlock = 16, kHeads = 2;
  for (const FlashSplitKernel& kernel : flash_split_kernels()) {
    for (KvDtype dtype : {KvDtype::kF32, KvDtype::kBf16, KvDtype::kInt8, KvDtype::kFp8}) {
      for (int64_t hd : {64, 40, 128}) {
        for (int64_t window : {0, 50}) {
          const int64_t keys = 300, rows = 3, group = 5;
          const int64_t slots = (keys + kBlock - 1) / kBlock * kBlock;
          const int64_t elem = dtype == KvDtype::kF32 ? 4 : dtype == KvDtype::kBf16 ? 2 : 1;
          std::vector<uint8_t> k(static_cast<size_t>(slots * kHeads * hd * elem)), v(k.size());
          std::mt19937 rng(static_cast<uint32_t>(hd * 7 + window));
          if (dtype == KvDtype::kF32 || dtype == KvDtype::kBf16) {
            const auto kf = floats(static_cast<size_t>(slots * kHeads * hd), 60), vf = floats(kf.size(), 61);
            for (size_t i = 0; i < kf.size(); ++i) {
              if (dtype == KvDtype::kF32) {
                std::memcpy(k.data() + 4 * i, &kf[i], 4);
                std::memcpy(v.data() + 4 * i, &vf[i], 4);
              } else {
                const uint16_t a = f32_to_bf16(kf[i]), b = f32_to_bf16(vf[i]);
                std::memcpy(k.data() + 2 * i, &a, 2);
                std::memcpy(v.data() + 2 * i, &b, 2);
              }
            }
          } else {
            for (auto& b : k) b = static_cast<uint8_t>(rng() & (dtype == KvDtype::kFp8 ? 0xF7 : 0xFF));  // no e4m3 NaN
            for (auto& b : v) b = static_cast<uint8_t>(rng() & (dtype == KvDtype::kFp8 ? 0xF7 : 0xFF));
          }
          const auto ks = floats(static_cast<size_t>(slots * kHeads), 62, 0.01f), vs = floats(ks.size(), 63, 0.01f);
          std::vector<int32_t> table(static_cast<size_t>(slots / kBlock));
          for (size_t i = 0; i < table.size(); ++i) table[i] = static_cast<int32_t>(table.size() - 1 - i);
          const auto q = floats(static_cast<size_t>(rows * kHeads * group * hd), 64);
          std::vector<float> partial(static_cast<size_t>(rows * group * (hd + 2)));
          uint64_t h = 0;
          for (int64_t begin : {int64_t{0}, int64_t{256}}) {
            FlashSplitArgs a{};
            a.q = q.data();
            a.q_row_stride = kHeads * group * hd;
            a.num_rows = rows;
            a.group = group;
            a.head_dim = hd;
            a.first_position = keys - rows;
            a.sliding_window = window;
            a.key_begin = begin;
            a.key_end = begin == 0 ? 256 : keys;
            a.scale = 0.125f;
            a.keys = k.data();
            a.values = v.data();
            a.block_table = table.data();
            a.block_size = kBlock;
            a.token_stride = kHeads * hd;
            a.kv_dtype = dtype;
            a.key_scales = ks.data();
            a.value_scales = vs.data();
            a.scale_stride = kHeads;
            a.partial = partial.data();
            kernel.run(a);
            h = digest(partial, h);
          }
          print(std::string("flash_") + kernel.name + "/" + std::to_string(static_cast<int>(dtype)) + "/hd" + std::to_string(hd) +
                    "/w" + std::to_string(window),
                kernel.isa, h);
        }
      }
    }
  }
}

}  // namespace

int main() {
  for (Isa isa : available_isas()) {
    row_ops(isa);
    vocab(isa);
    conversions(isa);
    decoders(isa);
  }
  matmuls();
  flash();
  return 0;
}
