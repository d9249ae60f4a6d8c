// Flash-attention split kernels (every ISA on this machine, every KV cache dtype) folded over
// splits, against a dense double-precision softmax attention over the values the cache holds; row
// independence (bitwise); quantized caches against the f32 one; the merge's edge cases.
#include "lemma/kernels/attention/flash_attention.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <numeric>
#include <utility>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "lemma/kernels/attention/kv_quant.h"
#include "lemma/kernels/kernel_scratch.h"

namespace lemma::kernels {
namespace {

std::vector<float> random_values(size_t n, uint32_t seed, float scale = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, scale);
  std::vector<float> v(n);
  for (float& x : v) x = normal(rng);
  return v;
}

struct Shape {
  int64_t head_dim, group, num_kv_heads, context, num_rows, block_size, window;
};

constexpr KvDtype kDtypes[] = {KvDtype::kF32, KvDtype::kBf16, KvDtype::kInt8, KvDtype::kFp8};

std::string describe(const Shape& s, const FlashSplitKernel& kernel, KvDtype dtype = KvDtype::kF32) {
  return std::string(kernel.name) + " " + kv_dtype_name(dtype) + " hd=" + std::to_string(s.head_dim) + " group=" + std::to_string(s.group) +
         " kv=" + std::to_string(s.num_kv_heads) + " ctx=" + std::to_string(s.context) +
         " rows=" + std::to_string(s.num_rows) + " bs=" + std::to_string(s.block_size) +
         " window=" + std::to_string(s.window);
}

// Dense keys/values scattered over a paged cache of `dtype` with a shuffled block table; each
// (token, KV head) row encoded as the model writes it (kv_encode_row).
struct PagedCache {
  KvDtype dtype;
  std::vector<float> dense_k, dense_v;  // [context, num_kv_heads, head_dim], what was written
  std::vector<float> held_k, held_v;    // the same, decoded from the cache: what the kernels see
  std::vector<uint8_t> keys, values;    // [num_blocks, block_size, num_kv_heads, head_dim] elements
  std::vector<float> key_scales, value_scales;  // [num_blocks, block_size, num_kv_heads]
  std::vector<int32_t> table;

  // `fixed_table`: the block table to use (values below blocks needed + 3) instead of a shuffled one.
  PagedCache(const Shape& s, uint32_t seed, KvDtype dtype_ = KvDtype::kF32, float key_gain = 1.0f,
             const std::vector<int32_t>& fixed_table = {})
      : dtype(dtype_) {
    const int64_t hd = s.head_dim, stride = s.num_kv_heads * hd, esize = kv_element_bytes(dtype);
    dense_k = random_values(static_cast<size_t>(s.context * stride), seed, key_gain);
    dense_v = random_values(static_cast<size_t>(s.context * stride), seed + 1);
    held_k.resize(dense_k.size());
    held_v.resize(dense_v.size());
    const int64_t needed = (s.context + s.block_size - 1) / s.block_size, num_blocks = needed + 3;
    std::vector<int32_t> ids(static_cast<size_t>(num_blocks));
    std::iota(ids.begin(), ids.end(), 0);
    std::shuffle(ids.begin(), ids.end(), std::mt19937(seed + 2));
    table.assign(ids.begin(), ids.begin() + needed);
    if (!fixed_table.empty()) table = fixed_table;
    // Unused slots read as NaN (f32/bf16 NaN bits, int8/fp8 NaN scales): reading a key outside the
    // context would poison the result.
    const size_t rows = static_cast<size_t>(num_blocks * s.block_size * s.num_kv_heads);
    const std::vector<float> nan_row(static_cast<size_t>(hd), std::numeric_limits<float>::quiet_NaN());
    keys.resize(rows * static_cast<size_t>(hd * esize));
    key_scales.assign(rows, std::numeric_limits<float>::quiet_NaN());
    for (size_t r = 0; r < rows; ++r) {
      float unused_scale;
      kv_encode_row(dtype, nan_row.data(), hd, keys.data() + r * hd * esize, &unused_scale);
    }
    values = keys;
    value_scales = key_scales;
    for (int64_t p = 0; p < s.context; ++p) {
      const int64_t slot = table[static_cast<size_t>(p / s.block_size)] * s.block_size + p % s.block_size;
      for (int64_t h = 0; h < s.num_kv_heads; ++h) {
        const int64_t row = slot * s.num_kv_heads + h, at = p * stride + h * hd;
        kv_encode_row(dtype, dense_k.data() + at, hd, keys.data() + row * hd * esize, &key_scales[row]);
        kv_encode_row(dtype, dense_v.data() + at, hd, values.data() + row * hd * esize, &value_scales[row]);
        kv_decode_row(dtype, keys.data() + row * hd * esize, key_scales[row], hd, held_k.data() + at);
        kv_decode_row(dtype, values.data() + row * hd * esize, value_scales[row], hd, held_v.data() + at);
      }
    }
  }
};

// Queries are the last num_rows positions; q: [num_rows, num_kv_heads * group, head_dim]. Over the
// values the cache holds, or (written = true) the f32 values before encoding.
std::vector<double> dense_attention(const Shape& s, const PagedCache& c, const std::vector<float>& q, float scale,
                                    bool written = false) {
  const std::vector<float>& dense_k = written ? c.dense_k : c.held_k;
  const std::vector<float>& dense_v = written ? c.dense_v : c.held_v;
  const int64_t nh = s.num_kv_heads * s.group, hd = s.head_dim, kv_stride = s.num_kv_heads * hd;
  std::vector<double> out(q.size(), 0.0);
  for (int64_t r = 0; r < s.num_rows; ++r) {
    const int64_t pos = s.context - s.num_rows + r;
    const int64_t lo = s.window > 0 ? std::max<int64_t>(0, pos - s.window + 1) : 0;
    for (int64_t h = 0; h < nh; ++h) {
      const float* qv = q.data() + (r * nh + h) * hd;
      const int64_t kvh = h / s.group;
      std::vector<double> w;
      double max_score = -INFINITY;
      for (int64_t j = lo; j <= pos; ++j) {
        double dot = 0.0;
        const float* kj = dense_k.data() + j * kv_stride + kvh * hd;
        for (int64_t d = 0; d < hd; ++d) dot += double(qv[d]) * kj[d];
        w.push_back(dot * scale);
        max_score = std::max(max_score, w.back());
      }
      double sum = 0.0;
      for (double& x : w) sum += (x = std::exp(x - max_score));
      double* o = out.data() + (r * nh + h) * hd;
      for (int64_t j = lo; j <= pos; ++j)
        for (int64_t d = 0; d < hd; ++d)
          o[d] += w[static_cast<size_t>(j - lo)] / sum * dense_v[static_cast<size_t>(j * kv_stride + kvh * hd + d)];
    }
  }
  return out;
}

FlashSplitArgs args_for(const Shape& s, const PagedCache& c, const float* q, int64_t kv_head, int64_t row_begin,
                        int64_t rows, int64_t split, float scale, float* partial) {
  const int64_t nh = s.num_kv_heads * s.group, hd = s.head_dim;
  FlashSplitArgs a{};
  a.q = q + (row_begin * nh + kv_head * s.group) * hd;
  a.q_row_stride = nh * hd;
  a.num_rows = rows;
  a.group = s.group;
  a.head_dim = hd;
  a.first_position = s.context - s.num_rows + row_begin;
  a.sliding_window = s.window;
  a.key_begin = split * kFlashSplitKeys;
  a.key_end = std::min((split + 1) * kFlashSplitKeys, s.context);
  a.scale = scale;
  a.keys = c.keys.data() + kv_head * hd * kv_element_bytes(c.dtype);
  a.values = c.values.data() + kv_head * hd * kv_element_bytes(c.dtype);
  a.block_table = c.table.data();
  a.block_size = s.block_size;
  a.token_stride = s.num_kv_heads * hd;
  a.kv_dtype = c.dtype;
  a.key_scales = c.key_scales.data() + kv_head;
  a.value_scales = c.value_scales.data() + kv_head;
  a.scale_stride = s.num_kv_heads;
  a.partial = partial;
  return a;
}

// Runs every split over rows [row_begin, row_begin + rows) and folds them in order into out rows.
void flash_rows(const Shape& s, const PagedCache& c, const std::vector<float>& q, float scale, const FlashSplitKernel& kernel,
                int64_t row_begin, int64_t rows, std::vector<float>& out) {
  const int64_t nh = s.num_kv_heads * s.group, hd = s.head_dim, ps = flash_partial_stride(hd);
  const int64_t queries = rows * s.group;
  std::vector<float> total(static_cast<size_t>(queries * ps)), part(total.size());
  const int64_t num_splits = (s.context - 1) / kFlashSplitKeys + 1;
  for (int64_t h = 0; h < s.num_kv_heads; ++h) {
    for (int64_t i = 0; i < queries; ++i) {
      total[static_cast<size_t>(i * ps)] = -INFINITY;
      total[static_cast<size_t>(i * ps + 1)] = 0.0f;
    }
    for (int64_t split = 0; split < num_splits; ++split) {
      kernel.run(args_for(s, c, q.data(), h, row_begin, rows, split, scale, part.data()));
      for (int64_t i = 0; i < queries; ++i) flash_merge(total.data() + i * ps, part.data() + i * ps, hd);
    }
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t g = 0; g < s.group; ++g)
        flash_finish(total.data() + (r * s.group + g) * ps, hd,
                     out.data() + ((row_begin + r) * nh + h * s.group + g) * hd);
  }
}

// Every split kernel this machine has, folded over the splits, against `want` within
// tolerance * (1 + |want|) per element.
void expect_every_kernel_matches(const Shape& s, const PagedCache& c, const std::vector<float>& q, float scale,
                                 const std::vector<double>& want, double tolerance) {
  for (const FlashSplitKernel& kernel : flash_split_kernels()) {
    std::vector<float> got(q.size(), -1.0f);
    flash_rows(s, c, q, scale, kernel, 0, s.num_rows, got);
    for (size_t i = 0; i < got.size(); ++i)
      ASSERT_NEAR(got[i], want[i], tolerance + tolerance * std::fabs(want[i])) << describe(s, kernel, c.dtype) << " element " << i;
  }
}

const Shape kShapes[] = {
    {16, 1, 1, 1, 1, 1, 0},     {32, 2, 2, 17, 17, 16, 0},   {64, 4, 2, 300, 5, 32, 0},
    {80, 7, 1, 257, 1, 16, 0},  {128, 1, 2, 513, 3, 32, 0},  {64, 2, 1, 600, 40, 1, 0},
    {16, 7, 2, 255, 255, 16, 0}, {32, 4, 1, 700, 9, 16, 100}, {80, 2, 1, 530, 30, 32, 300},
    {128, 2, 1, 33, 33, 1, 7},  {64, 1, 3, 1031, 2, 16, 256}, {24, 3, 1, 19, 19, 16, 0},
    {20, 3, 1, 270, 6, 16, 0},  {4, 2, 2, 40, 40, 4, 9},     {272, 2, 1, 260, 3, 32, 0},  // vector tails, > 256
    {528, 2, 1, 40, 3, 16, 0},  // longer than the AVX512_BF16 kernel's bf16 query halves hold
};

TEST(FlashAttention, EveryIsaMatchesDenseSoftmaxAttentionForEveryKvDtype) {
  // The kernels read int8/fp8/bf16 codes directly; the result must be the attention over exactly
  // the decoded values (only the f32 arithmetic's rounding differs).
  for (KvDtype dtype : kDtypes) {
    uint32_t seed = 100;
    for (const Shape& s : kShapes) {
      const PagedCache c(s, seed += 7, dtype);
      const auto q = random_values(static_cast<size_t>(s.num_rows * s.num_kv_heads * s.group * s.head_dim), seed + 3);
      const float scale = 1.0f / std::sqrt(static_cast<float>(s.head_dim));
      expect_every_kernel_matches(s, c, q, scale, dense_attention(s, c, q, scale), 2e-5);
    }
  }
}

TEST(FlashAttention, EachIsaRunsTheBestKernelTheCpuHas) {
  // flash_attention_split(args, avx512) must be the AVX512_BF16 build where the CPU has it (the
  // plain one differs for bf16 caches), and every listed kernel must need an ISA the CPU has.
  const std::vector<FlashSplitKernel> kernels = flash_split_kernels();
  ASSERT_STREQ(kernels.front().name, "scalar");
  for (const FlashSplitKernel& kernel : kernels) EXPECT_LE(kernel.isa, detected_isa()) << kernel.name;
  const bool has_bf16 = cpu_features().avx512_bf16 && detected_isa() >= Isa::kAvx512;
  EXPECT_EQ(has_bf16, std::any_of(kernels.begin(), kernels.end(), [](const FlashSplitKernel& k) {
              return std::string(k.name) == "avx512_bf16";
            }));
  const Shape s{64, 7, 1, 300, 2, 16, 0};
  const PagedCache c(s, 77, KvDtype::kBf16);
  const auto q = random_values(static_cast<size_t>(s.num_rows * s.group * s.head_dim), 78);
  const int64_t ps = flash_partial_stride(s.head_dim);
  for (const FlashSplitKernel& kernel : kernels) {
    if (std::string(kernel.name) == (has_bf16 ? "avx512" : "avx512_bf16")) continue;  // not what isa runs
    if (std::string(kernel.name) == "amx_emulated") continue;                          // tests only
    std::vector<float> want(static_cast<size_t>(s.num_rows * s.group * ps)), got(want.size());
    kernel.run(args_for(s, c, q.data(), 0, 0, s.num_rows, 1, 0.125f, want.data()));
    flash_attention_split(args_for(s, c, q.data(), 0, 0, s.num_rows, 1, 0.125f, got.data()), kernel.isa);
    EXPECT_EQ(0, std::memcmp(want.data(), got.data(), want.size() * sizeof(float))) << kernel.name;
  }
}

// The AMX kernel (emulated, and on hardware where there is AMX) stages its tiles in the scratch the
// caller lends (FlashSplitArgs::scratch): it grows it, and its bits do not depend on what an earlier
// user left there (here: 0xFF bytes, NaNs); the other kernels ignore it.
TEST(FlashAttention, KernelsStageInTheLentScratchWhateverItHolds) {
  const Shape s{80, 4, 1, 600, 20, 16, 0};
  const PagedCache c(s, 91, KvDtype::kBf16);
  const auto q = random_values(static_cast<size_t>(s.num_rows * s.group * s.head_dim), 92);
  const int64_t ps = flash_partial_stride(s.head_dim);
  for (const FlashSplitKernel& kernel : flash_split_kernels()) {
    const bool amx = std::string(kernel.name).starts_with("amx");
    KernelScratch scratch;
    for (int64_t split = 0; split < 3; ++split) {
      std::vector<float> own(static_cast<size_t>(s.num_rows * s.group * ps)), lent(own.size());
      kernel.run(args_for(s, c, q.data(), 0, 0, s.num_rows, split, 0.125f, own.data()));
      FlashSplitArgs a = args_for(s, c, q.data(), 0, 0, s.num_rows, split, 0.125f, lent.data());
      a.scratch = &scratch;
      kernel.run(a);
      EXPECT_EQ(0, std::memcmp(own.data(), lent.data(), own.size() * sizeof(float))) << kernel.name << " split " << split;
      EXPECT_EQ(scratch.capacity() > 0, amx) << kernel.name;
      if (scratch.capacity() > 0) std::memset(scratch.reserve(scratch.capacity()), 0xFF, scratch.capacity());
    }
  }
}

TEST(FlashAttention, QuantizedCachesStayCloseToTheF32Result) {
  // The encoding error itself, measured against attention over the values before encoding:
  // mean |error| relative to the mean |output|.
  const struct {
    KvDtype dtype;
    double bound;
  } cases[] = {{KvDtype::kBf16, 0.01}, {KvDtype::kInt8, 0.02}, {KvDtype::kFp8, 0.06}};
  for (const auto& k : cases) {
    uint32_t seed = 300;
    double err = 0, mag = 0;
    for (const Shape& s : kShapes) {
      const PagedCache c(s, seed += 7, k.dtype);
      const auto q = random_values(static_cast<size_t>(s.num_rows * s.num_kv_heads * s.group * s.head_dim), seed + 3);
      const float scale = 1.0f / std::sqrt(static_cast<float>(s.head_dim));
      const auto want = dense_attention(s, c, q, scale, /*written=*/true);
      std::vector<float> got(q.size());
      const FlashSplitKernel active{"active", detected_isa(), [](const FlashSplitArgs& a) { flash_attention_split(a); }};
      flash_rows(s, c, q, scale, active, 0, s.num_rows, got);
      for (size_t i = 0; i < got.size(); ++i) err += std::fabs(got[i] - want[i]), mag += std::fabs(want[i]);
    }
    std::printf("%s KV: mean |error| / mean |output| = %.4f\n", kv_dtype_name(k.dtype), err / mag);
    EXPECT_GT(err, 0.0) << kv_dtype_name(k.dtype);
    EXPECT_LT(err / mag, k.bound) << kv_dtype_name(k.dtype);
  }
}

TEST(FlashAttention, RowsAreBitwiseIndependentOfTheirNeighbours) {
  // A row computed alone (as in decode) equals the same row computed with all others (prefill).
  for (KvDtype dtype : kDtypes) {
    uint32_t seed = 500;
    for (const Shape& s : kShapes) {
      const PagedCache c(s, seed += 7, dtype);
      const auto q = random_values(static_cast<size_t>(s.num_rows * s.num_kv_heads * s.group * s.head_dim), seed + 3);
      const float scale = 1.0f / std::sqrt(static_cast<float>(s.head_dim));
      for (const FlashSplitKernel& kernel : flash_split_kernels()) {
        std::vector<float> together(q.size()), alone(q.size());
        flash_rows(s, c, q, scale, kernel, 0, s.num_rows, together);
        for (int64_t r = 0; r < s.num_rows; ++r) flash_rows(s, c, q, scale, kernel, r, 1, alone);
        ASSERT_EQ(0, std::memcmp(together.data(), alone.data(), together.size() * sizeof(float)))
            << describe(s, kernel, dtype);
      }
    }
  }
}

TEST(FlashAttention, KeysOfATileInPermutedSlotsAreReadInTheirOrder) {
  // One-token blocks whose slots run 0, 2, 1, 3, ..., 15 for the first 16 keys: the tile's first
  // and last slots are 15 apart, yet its rows are not one contiguous run (a kernel reading 16 rows
  // in place from the first slot would swap keys 1 and 2).
  const Shape s{64, 2, 1, 40, 40, 1, 0};
  std::vector<int32_t> table(40);
  std::iota(table.begin(), table.end(), 0);
  std::swap(table[1], table[2]);
  std::swap(table[17], table[18]);
  for (KvDtype dtype : kDtypes) {
    const PagedCache c(s, 41, dtype, 1.0f, table);
    const auto q = random_values(static_cast<size_t>(s.num_rows * s.group * s.head_dim), 42);
    expect_every_kernel_matches(s, c, q, 0.125f, dense_attention(s, c, q, 0.125f), 2e-5);
  }
}

TEST(FlashAttention, BlocksBeforeTheWindowAreNeverRead) {
  // Blocks wholly before the first query's window may have been freed: their table entries point
  // far outside the cache, so reading any key there would crash.
  for (KvDtype dtype : kDtypes)
    for (const Shape& s : {Shape{32, 2, 1, 700, 3, 16, 100}, Shape{16, 4, 2, 530, 20, 1, 300}}) {
      PagedCache c(s, 21, dtype);
      const int64_t first_seen = s.context - s.num_rows - s.window + 1;
      for (int64_t b = 0; (b + 1) * s.block_size <= first_seen; ++b) c.table[static_cast<size_t>(b)] = 1 << 28;
      const auto q = random_values(static_cast<size_t>(s.num_rows * s.num_kv_heads * s.group * s.head_dim), 22);
      expect_every_kernel_matches(s, c, q, 0.25f, dense_attention(s, c, q, 0.25f), 2e-5);
    }
}

TEST(FlashAttention, LargeScoresDoNotOverflow) {
  // Scores of several hundred: a softmax without the running max would overflow exp.
  const Shape s{32, 2, 1, 400, 4, 16, 0};
  for (KvDtype dtype : kDtypes) {
    const PagedCache c(s, 9, dtype, /*key_gain=*/40.0f);
    const auto q = random_values(static_cast<size_t>(s.num_rows * s.group * s.head_dim), 11, 3.0f);
    expect_every_kernel_matches(s, c, q, 1.0f, dense_attention(s, c, q, 1.0f), 1e-4);
  }
}

TEST(FlashAttention, OneCallOverManySplitsOfKeysMatchesDenseAttention) {
  // The model calls the kernel once per split of kFlashSplitKeys keys; the kernel itself takes any
  // range, which the AVX-512 one walks in chunks with an online rescale between them. Scores of
  // tens (key gain 8) make the rescale matter.
  for (const Shape& s : {Shape{64, 7, 2, 1000, 3, 16, 0}, Shape{32, 4, 1, 700, 9, 16, 100},
                         Shape{80, 2, 1, 530, 30, 32, 300}, Shape{16, 3, 1, 777, 1, 1, 0}}) {
    for (KvDtype dtype : kDtypes) {
      const PagedCache c(s, 31, dtype, /*key_gain=*/8.0f);
      const auto q = random_values(static_cast<size_t>(s.num_rows * s.num_kv_heads * s.group * s.head_dim), 32);
      const float scale = 1.0f / std::sqrt(static_cast<float>(s.head_dim));
      const auto want = dense_attention(s, c, q, scale);
      const int64_t nh = s.num_kv_heads * s.group, hd = s.head_dim, ps = flash_partial_stride(hd);
      for (const FlashSplitKernel& kernel : flash_split_kernels()) {
        std::vector<float> got(q.size()), part(static_cast<size_t>(s.num_rows * s.group * ps));
        for (int64_t h = 0; h < s.num_kv_heads; ++h) {
          FlashSplitArgs a = args_for(s, c, q.data(), h, 0, s.num_rows, 0, scale, part.data());
          a.key_begin = 0;
          a.key_end = s.context;
          kernel.run(a);
          for (int64_t r = 0; r < s.num_rows; ++r)
            for (int64_t g = 0; g < s.group; ++g)
              flash_finish(part.data() + (r * s.group + g) * ps, hd, got.data() + (r * nh + h * s.group + g) * hd);
        }
        for (size_t i = 0; i < got.size(); ++i)
          ASSERT_NEAR(got[i], want[i], 5e-5 + 5e-5 * std::fabs(want[i])) << describe(s, kernel, dtype) << " element " << i;
        // Each row alone gives the same bits: how the range is cut must not depend on the other
        // rows (with a window, the first row decides which keys the call reads at all).
        for (int64_t h = 0; h < s.num_kv_heads; ++h)
          for (int64_t r = 0; r < s.num_rows; ++r) {
            FlashSplitArgs a = args_for(s, c, q.data(), h, r, 1, 0, scale, part.data());
            a.key_begin = 0;
            a.key_end = s.context;
            kernel.run(a);
            for (int64_t g = 0; g < s.group; ++g) {
              std::vector<float> alone(static_cast<size_t>(hd));
              flash_finish(part.data() + g * ps, hd, alone.data());
              ASSERT_EQ(0, std::memcmp(alone.data(), got.data() + (r * nh + h * s.group + g) * hd, hd * sizeof(float)))
                  << describe(s, kernel, dtype) << " row " << r << " head " << h * s.group + g;
            }
          }
      }
    }
  }
}

TEST(FlashAttention, MergeSkipsEmptyPartsAndCopiesIntoAnEmptyTotal) {
  const int64_t hd = 2;
  float total[4] = {-INFINITY, 0.0f, 7.0f, 7.0f};
  const float empty[4] = {-INFINITY, 0.0f, 0.0f, 0.0f};
  const float a[4] = {1.0f, 2.0f, 4.0f, 6.0f};
  const float b[4] = {3.0f, 1.0f, 1.0f, 2.0f};
  flash_merge(total, empty, hd);
  EXPECT_EQ(total[0], -INFINITY);
  flash_merge(total, a, hd);
  EXPECT_EQ(std::vector<float>(total, total + 4), std::vector<float>(a, a + 4));
  flash_merge(total, empty, hd);
  EXPECT_EQ(std::vector<float>(total, total + 4), std::vector<float>(a, a + 4));
  flash_merge(total, b, hd);
  const float ea = std::exp(1.0f - 3.0f);
  EXPECT_FLOAT_EQ(total[0], 3.0f);
  EXPECT_FLOAT_EQ(total[1], 2.0f * ea + 1.0f);
  float out[2];
  flash_finish(total, hd, out);
  EXPECT_FLOAT_EQ(out[0], (4.0f * ea + 1.0f) / (2.0f * ea + 1.0f));
  EXPECT_FLOAT_EQ(out[1], (6.0f * ea + 2.0f) / (2.0f * ea + 1.0f));
  const float nothing[4] = {-INFINITY, 0.0f, 0.0f, 0.0f};
  out[0] = out[1] = 5.0f;
  flash_finish(nothing, hd, out);
  EXPECT_EQ(out[0], 0.0f);
  EXPECT_EQ(out[1], 0.0f);
}

}  // namespace
}  // namespace lemma::kernels
