// Linear groups on a team (G21): guided row tiles cover the row space once, in aligned tiles that
// shrink to the minimum (so threads finish within a small tile of each other), and a group run on
// teams of any size gives the bits of the inline run, with tiles crossing from one matrix into the
// next and matrices whose row counts are not whole 16-row groups; and an input written row by row
// (the model's norms, fused with x's conversion) gives the bits of one written first.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <map>
#include <mutex>
#include <random>
#include <thread>
#include <utility>
#include <vector>

#include "lemma/base/error.h"
#include "lemma/kernels/float_bits.h"
#include "lemma/kernels/interleaved_blocks.h"
#include "lemma/kernels/isa.h"
#include "lemma/model/layers/linear.h"
#include "lemma/model/layers/row_tiles.h"
#include "lemma/model/thread_team.h"

namespace lemma::layers {
namespace {

TEST(RowTiles, GuidedTilesCoverTheRowsOnceAndShrinkToTheMinimum) {
  for (int64_t threads : {2, 3, 8}) {
    for (int64_t rows : {0, 16, 80, 1152, 9728, 151936}) {
      for (int64_t min_rows : {16, 80}) {
        const RowTiles t = guided_row_tiles(rows, threads, min_rows, 16);
        SCOPED_TRACE(::testing::Message() << "threads=" << threads << " rows=" << rows << " min=" << min_rows);
        ASSERT_LE(t.count, RowTiles::kMaxTiles);
        ASSERT_EQ(t.count == 0, rows == 0);
        EXPECT_EQ(t.start[0], 0);
        EXPECT_EQ(t.start[static_cast<size_t>(t.count)], rows);
        for (int64_t i = 0; i < t.count; ++i) {
          const int64_t size = t.start[static_cast<size_t>(i) + 1] - t.start[static_cast<size_t>(i)];
          ASSERT_GT(size, 0);
          ASSERT_EQ(t.start[static_cast<size_t>(i)] % 16, 0);
          if (i + 1 < t.count) {
            EXPECT_GE(size, min_rows);
            EXPECT_LE(t.start[static_cast<size_t>(i) + 2] - t.start[static_cast<size_t>(i) + 1], size);  // never growing
          }
        }
        if (t.count > 1) {
          // The first tile is about 1 / (2 threads) of the rows; the last one at most the minimum
          // or a share of what was left, so no thread waits long for another.
          EXPECT_LE(t.start[1], (rows + 2 * threads - 1) / (2 * threads) + 15 + min_rows);
          const int64_t last = rows - t.start[static_cast<size_t>(t.count) - 1];
          EXPECT_LE(last, std::max<int64_t>(min_rows, rows / 32)) << "tiles " << t.count;
        }
      }
    }
  }
  // Many threads, many small groups: still within the table.
  for (int64_t threads : {64, 200}) {
    const RowTiles t = guided_row_tiles(16 * 100000, threads, 16, 16);
    EXPECT_LE(t.count, RowTiles::kMaxTiles);
    EXPECT_EQ(t.start[static_cast<size_t>(t.count)], 16 * 100000);
  }
}

// q/k/v-like outputs (row counts 100, 48, 37: tiles cross matrix edges, two matrices end inside a
// 16-row group) in f32 and interleaved bf16x16: a team of 2, 3 or 4 threads
// gives the inline run's bits.
TEST(LinearGroup, TeamsGiveTheInlineBitsAcrossMatrixEdges) {
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  const int64_t M = 3, K = 64;
  const int64_t rows[] = {100, 48, 37};
  for (kernels::MatrixFormat dtype : {kernels::MatrixFormat(DType::kF32), kernels::interleaved(DType::kBF16)}) {
    std::vector<std::vector<uint8_t>> bytes;
    std::vector<TensorView> weights;
    for (int64_t N : rows) {
      std::vector<float> w(static_cast<size_t>(N * K));
      for (auto& v : w) v = dist(rng);
      if (dtype == DType::kF32) {
        bytes.emplace_back(w.size() * 4);
        std::memcpy(bytes.back().data(), w.data(), w.size() * 4);
      } else {
        std::vector<uint16_t> plain(w.size());
        for (size_t i = 0; i < w.size(); ++i) plain[i] = kernels::f32_to_bf16(w[i]);
        bytes.emplace_back(kernels::interleaved_bytes(DType::kBF16, N, K) + 64);
        auto* aligned = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(bytes.back().data()) + 63) / 64 * 64);
        kernels::interleave_rows(DType::kBF16, plain.data(), N, K, aligned);
      }
    }
    for (size_t i = 0; i < bytes.size(); ++i) {
      void* data = bytes[i].data();
      if (dtype != DType::kF32) data = reinterpret_cast<void*>((reinterpret_cast<uintptr_t>(data) + 63) / 64 * 64);
      weights.push_back(TensorView{data, dtype.dtype, Shape{rows[i], K}, dtype.layout});
    }
    std::vector<float> x(static_cast<size_t>(M * K));
    for (auto& v : x) v = dist(rng);
    const auto run = [&](ThreadTeam* team) {
      std::vector<std::vector<float>> ys;
      std::vector<LinearOutput> outputs;
      for (int64_t N : rows) ys.emplace_back(static_cast<size_t>(M * N), -1.0f);
      for (size_t i = 0; i < ys.size(); ++i) outputs.push_back({&weights[i], {}, ys[i], {}});
      linear_group(x, M, outputs, team);
      return ys;
    };
    const auto want = run(nullptr);
    for (int threads : {2, 3, 4}) {
      ThreadTeam team(threads);
      const auto got = run(&team);
      for (size_t i = 0; i < want.size(); ++i)
        ASSERT_EQ(std::memcmp(got[i].data(), want[i].data(), want[i].size() * 4), 0) << kernels::format_name(dtype) << " " << threads << " threads, output " << i;
    }
  }
}

// Random [N, K] weights of `dtype` (F32, BF16, BF16x16 or Q8_0 with random codes), 64-byte aligned.
struct Weights {
  std::vector<uint8_t> bytes;
  TensorView view;
};
Weights random_weights(kernels::MatrixFormat dtype, int64_t N, int64_t K, std::mt19937& rng) {
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> w(static_cast<size_t>(N * K));
  for (auto& v : w) v = dist(rng);
  Weights out;
  const size_t size = dtype == kernels::interleaved(DType::kBF16) ? kernels::interleaved_bytes(DType::kBF16, N, K)
                                               : *dtype_bytes(dtype.dtype, static_cast<uint64_t>(N * K));
  out.bytes.resize(size + 64);
  auto* data = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(out.bytes.data()) + 63) / 64 * 64);
  if (dtype == DType::kF32) {
    std::memcpy(data, w.data(), w.size() * 4);
  } else if (dtype == DType::kQ8_0) {  // blocks of an f16 scale and 32 codes
    for (size_t b = 0; b < w.size() / 32; ++b) {
      const uint16_t d = kernels::f32_to_f16(0.01f + 0.001f * static_cast<float>(b % 7));
      std::memcpy(data + 34 * b, &d, 2);
      for (size_t i = 0; i < 32; ++i) data[34 * b + 2 + i] = static_cast<uint8_t>(static_cast<int8_t>(w[32 * b + i] * 127.0f));
    }
  } else {
    std::vector<uint16_t> plain(w.size());
    for (size_t i = 0; i < w.size(); ++i) plain[i] = kernels::f32_to_bf16(w[i]);
    if (dtype == DType::kBF16) {
      std::memcpy(data, plain.data(), plain.size() * 2);
    } else {
      kernels::interleave_rows(DType::kBF16, plain.data(), N, K, data);
    }
  }
  out.view = TensorView{data, dtype.dtype, Shape{N, K}, dtype.layout};
  return out;
}

// x written row by row by write_x (as the model's norms write it, each range converted for the
// kernels right after it is written where they read x row by row) gives the bits of x written first
// and linear_group(), inline and on teams of 2 and 3, with every row written once. Before each run
// the same plan runs over another x, so a range left unconverted would read stale rows and fail.
TEST(LinearGroup, InputWrittenRowByRowGivesTheBitsOfWritingItFirst) {
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  const int64_t K = 1024;  // ranges of 16 rows on a team (16K values each)
  const int64_t rows[] = {100, 48};
  bool converted_by_rows = false;
  for (kernels::MatrixFormat dtype :
       {kernels::MatrixFormat(DType::kF32), kernels::MatrixFormat(DType::kBF16), kernels::interleaved(DType::kBF16),
        kernels::MatrixFormat(DType::kQ8_0)}) {
    std::vector<Weights> weights;
    for (int64_t N : rows) weights.push_back(random_weights(dtype, N, K, rng));
    for (int64_t M : {1, 5, 40}) {
      std::vector<float> source(static_cast<size_t>(M * K));
      for (auto& v : source) v = dist(rng);
      const auto row_of_x = [&](std::span<float> x, int64_t r) {  // any row-local function of the source
        for (int64_t k = 0; k < K; ++k) x[static_cast<size_t>(r * K + k)] = 1.5f * source[static_cast<size_t>(r * K + k)] - 0.25f;
      };
      const auto outputs_into = [&](std::vector<std::vector<float>>& ys) {
        std::vector<LinearOutput> outputs;
        ys.clear();
        for (int64_t N : rows) ys.emplace_back(static_cast<size_t>(M * N), -1.0f);
        for (size_t i = 0; i < ys.size(); ++i) outputs.push_back({&weights[i].view, {}, ys[i], {}});
        return outputs;
      };
      std::vector<float> x(static_cast<size_t>(M * K));
      for (int64_t r = 0; r < M; ++r) row_of_x(x, r);
      std::vector<std::vector<float>> want;
      linear_group(x, M, outputs_into(want), nullptr);
      for (int threads : {1, 2, 3}) {
        SCOPED_TRACE(::testing::Message() << kernels::format_name(dtype) << " M=" << M << " threads=" << threads);
        ThreadTeam team(threads);
        std::vector<std::vector<float>> got;
        const auto outputs = outputs_into(got);
        LinearGroupPlan plan = plan_linear_group(x, M, outputs, &team);
        converted_by_rows = converted_by_rows || plan.plans[0].xq_row_bytes != 0;
        std::fill(x.begin(), x.end(), 0.75f);
        LinearScratch scratch;
        run_linear_group(plan, &team, scratch);  // the other x, prepared into the same scratch
        std::fill(x.begin(), x.end(), std::numeric_limits<float>::quiet_NaN());
        std::vector<int> written(static_cast<size_t>(M), 0);
        write_linear_group_input(plan, &team, scratch, [&](int64_t m0, int64_t m1) {
          for (int64_t r = m0; r < m1; ++r) {
            row_of_x(x, r);
            ++written[static_cast<size_t>(r)];
          }
        });
        run_prepared_linear_group(plan, &team);
        EXPECT_EQ(std::count(written.begin(), written.end(), 1), M);
        for (size_t i = 0; i < want.size(); ++i)
          ASSERT_EQ(std::memcmp(got[i].data(), want[i].data(), want[i].size() * 4), 0) << "output " << i;
      }
    }
  }
  // bf16 weights read x as bf16 rows where the CPU has AVX512_BF16: the fused path ran.
  if (kernels::cpu_features().avx512_bf16 && kernels::detected_isa() >= kernels::Isa::kAvx512) { EXPECT_TRUE(converted_by_rows); }
}

// Each thread of the team lends the kernels its own scratch (one per worker index): every call
// gets one of the caller's, and no scratch is used by two threads. The kernel here records what it
// got, then runs the planned one.
struct ScratchUse {
  std::mutex mutex;
  std::vector<std::pair<const kernels::KernelScratch*, std::thread::id>> calls;
  kernels::MatmulFn planned = nullptr;
};
ScratchUse g_scratch_use;
void recording_kernel(const kernels::MatmulArgs& a) {
  {
    std::lock_guard lock(g_scratch_use.mutex);
    g_scratch_use.calls.emplace_back(a.scratch, std::this_thread::get_id());
  }
  g_scratch_use.planned(a);
}

TEST(LinearGroup, EachThreadLendsTheKernelsItsOwnScratch) {
  std::mt19937 rng(9);
  const int64_t M = 5, K = 256;
  const Weights a = random_weights(DType::kF32, 100, K, rng), b = random_weights(DType::kF32, 48, K, rng);
  std::vector<float> x(static_cast<size_t>(M * K), 0.5f), ya(static_cast<size_t>(M * 100)), yb(static_cast<size_t>(M * 48));
  const LinearOutput outputs[] = {{&a.view, {}, ya, {}}, {&b.view, {}, yb, {}}};
  for (int threads : {1, 3}) {
    ThreadTeam team(threads);
    std::vector<kernels::KernelScratch> per_worker(static_cast<size_t>(threads));
    LinearGroupPlan plan = plan_linear_group(x, M, outputs, &team);
    g_scratch_use.planned = plan.plans[0].fn;
    ASSERT_EQ(plan.plans[1].fn, g_scratch_use.planned);
    for (size_t i = 0; i < plan.count; ++i) plan.plans[i].fn = recording_kernel;
    g_scratch_use.calls.clear();
    LinearScratch scratch;
    for (int round = 0; round < 10; ++round) run_linear_group(plan, &team, scratch, per_worker);
    ASSERT_FALSE(g_scratch_use.calls.empty());
    std::map<const kernels::KernelScratch*, std::thread::id> owner;
    for (const auto& [lent, thread] : g_scratch_use.calls) {
      ASSERT_TRUE(lent >= per_worker.data() && lent < per_worker.data() + per_worker.size()) << threads << " threads";
      EXPECT_EQ(owner.emplace(lent, thread).first->second, thread) << "a scratch lent to two threads";
    }
  }
}

// Outputs with input orders (GPTQ act-order matrices served with their inputs sorted by group):
// each reads x[:, order], bit for bit what linear() gives on x gathered by hand, whether the group
// runs inline or on a team, x given or written row by row, and whatever the other outputs read.
// Two outputs with equal orders (equal contents in separate vectors, as q/k/v's) share one gather.
TEST(LinearGroup, InputOrdersReadXInThatOrder) {
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  const int64_t K = 1024;
  const int64_t rows[] = {48, 37, 64, 32};
  std::vector<int32_t> a(static_cast<size_t>(K)), b(static_cast<size_t>(K));
  for (int32_t k = 0; k < K; ++k) a[static_cast<size_t>(k)] = b[static_cast<size_t>(k)] = k;
  std::shuffle(a.begin(), a.end(), rng);
  std::shuffle(b.begin(), b.end(), rng);
  const std::vector<int32_t> a_copy = a;
  const std::span<const int32_t> orders[] = {a, a_copy, b, {}};
  for (kernels::MatrixFormat dtype :
       {kernels::MatrixFormat(DType::kF32), kernels::interleaved(DType::kBF16), kernels::MatrixFormat(DType::kQ8_0)}) {
    std::vector<Weights> weights;
    for (int64_t N : rows) weights.push_back(random_weights(dtype, N, K, rng));
    for (int64_t M : {1, 7, 40}) {
      SCOPED_TRACE(::testing::Message() << kernels::format_name(dtype) << " M=" << M);
      std::vector<float> x(static_cast<size_t>(M * K));
      for (auto& v : x) v = dist(rng);
      std::vector<std::vector<float>> want;
      for (size_t i = 0; i < std::size(rows); ++i) {
        std::vector<float> gathered = x;
        if (!orders[i].empty())
          for (int64_t m = 0; m < M; ++m)
            for (int64_t j = 0; j < K; ++j)
              gathered[static_cast<size_t>(m * K + j)] = x[static_cast<size_t>(m * K + orders[i][static_cast<size_t>(j)])];
        want.emplace_back(static_cast<size_t>(M * rows[i]));
        linear(gathered, M, weights[i].view, {}, want.back());
      }
      const auto outputs_into = [&](std::vector<std::vector<float>>& ys) {
        std::vector<LinearOutput> outputs;
        ys.clear();
        for (int64_t N : rows) ys.emplace_back(static_cast<size_t>(M * N), -1.0f);
        for (size_t i = 0; i < ys.size(); ++i) outputs.push_back({&weights[i].view, {}, ys[i], orders[i]});
        return outputs;
      };
      const auto expect_want = [&](const std::vector<std::vector<float>>& got, const char* how) {
        for (size_t i = 0; i < want.size(); ++i)
          ASSERT_EQ(std::memcmp(got[i].data(), want[i].data(), want[i].size() * 4), 0) << how << ", output " << i;
      };
      std::vector<std::vector<float>> got;
      linear_group(x, M, outputs_into(got), nullptr);
      expect_want(got, "inline");
      for (int threads : {2, 3}) {
        ThreadTeam team(threads);
        linear_group(x, M, outputs_into(got), &team);
        expect_want(got, "on a team");
        const std::vector<float> saved = x;
        LinearGroupPlan plan = plan_linear_group(x, M, outputs_into(got), &team);
        EXPECT_EQ(plan.num_orders, 2u);
        std::fill(x.begin(), x.end(), std::numeric_limits<float>::quiet_NaN());
        LinearScratch scratch;
        write_linear_group_input(plan, &team, scratch, [&](int64_t m0, int64_t m1) {
          std::copy(saved.begin() + m0 * K, saved.begin() + m1 * K, x.begin() + m0 * K);
        });
        run_prepared_linear_group(plan, &team);
        expect_want(got, "written row by row");
      }
    }
  }
  std::vector<float> x(static_cast<size_t>(K)), y(48);
  const std::vector<int32_t> short_order(static_cast<size_t>(K - 1), 0);
  const Weights w = random_weights(DType::kF32, 48, K, rng);
  const LinearOutput bad{&w.view, {}, y, short_order};
  EXPECT_THROW(linear_group(x, 1, std::span(&bad, 1), nullptr), InvalidArgument);
}

}  // namespace
}  // namespace lemma::layers
